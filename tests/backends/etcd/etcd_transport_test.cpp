// The etcd client's two wires against the shared member: gRPC (the default) and the JSON
// gateway (`transport=json`). The URL option picks the wire (a silent listener in front of the
// member sees an HTTP/2 preface or a POST /v3/ request), an unknown wire is a config_error, a
// hold on one wire excludes the other, and each wire fails over past a member that refuses
// connections and past one that accepts them but never answers.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "etcd_env.hpp"
#include "sqlock/client.hpp"
#include "test_env.hpp"

using namespace std::chrono_literals;

namespace sqlock::test {
namespace {

using namespace etcd_env;

// A listener on a free loopback port that accepts connections, keeps what they send and never
// answers: a member that is up but serves nothing.
class silent_member {
 public:
  silent_member() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    port_ = ntohs(a.sin_port);
    th_ = std::thread([this] { run(); });
  }
  ~silent_member() {
    stop_ = true;
    if (th_.joinable()) th_.join();
    for (int c : conns_) ::close(c);
    ::close(fd_);
  }
  silent_member(const silent_member&) = delete;
  silent_member& operator=(const silent_member&) = delete;

  int port() const { return port_; }
  std::string received() {
    std::lock_guard g(m_);
    return got_;
  }

 private:
  void run() {
    while (!stop_) {
      std::vector<pollfd> fds{{fd_, POLLIN, 0}};
      for (int c : conns_) fds.push_back({c, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c >= 0) conns_.push_back(c);
      }
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & POLLIN)) continue;
        char buf[4096];
        auto n = ::read(fds[i].fd, buf, sizeof buf);
        if (n <= 0) continue;
        std::lock_guard g(m_);
        got_.append(buf, static_cast<std::size_t>(n));
      }
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<int> conns_;  // only the thread touches it until it is joined
  std::mutex m_;
  std::string got_;
  std::thread th_;
};

// `u` with query parameter `p` ("k=v") added.
std::string with_param(const std::string& u, const std::string& p) {
  return u + (u.find('?') == std::string::npos ? "?" : "&") + p;
}

// The URL of the shared member with `first` ("host:port") listed before it.
std::string behind(const std::string& u, const std::string& first) {
  return "etcd://" + first + "," + endpoints_of(u) + "/" + prefix_of(u);
}

class etcd_transport : public ::testing::Test {
 protected:
  void SetUp() override { SQLOCK_REQUIRE_URL("SQLOCK_TEST_ETCD_URL", url_); }
  std::string url_;
};

TEST_F(etcd_transport, an_unknown_wire_is_a_config_error) {
  EXPECT_THROW(sqlock::connect(with_param(url_, "transport=http3")), config_error);
}

TEST_F(etcd_transport, a_hold_on_one_wire_excludes_the_other) {
  auto n = unique_name("wire");
  auto grpc = sqlock::connect(with_param(url_, "transport=grpc"));
  auto json = sqlock::connect(with_param(url_, "transport=json"));
  auto held = grpc.make_lock(n);
  ASSERT_TRUE(held.try_lock());
  EXPECT_FALSE(json.make_lock(n).try_lock());
  EXPECT_EQ(json.list(n).size(), 1u);
  held.unlock();
  auto other = json.make_lock(n);
  ASSERT_TRUE(other.try_lock());
  EXPECT_FALSE(grpc.make_lock(n).try_lock());
  other.unlock();
  EXPECT_EQ(keys(url_, n), "");
}

TEST_F(etcd_transport, each_wire_passes_over_a_member_that_refuses_connections) {
  // Port 1 on loopback: nothing listens there.
  for (const std::string wire : {"grpc", "json"}) {
    SCOPED_TRACE(wire);
    auto c = sqlock::connect(with_param(behind(url_, "127.0.0.1:1"), "transport=" + wire));
    auto l = c.make_lock(unique_name("refused"));
    ASSERT_TRUE(l.try_lock_for(5s));
    l.unlock();
  }
}

TEST_F(etcd_transport, each_wire_passes_over_a_member_that_never_answers_and_speaks_its_own) {
  for (const std::string wire : {"grpc", "json"}) {
    SCOPED_TRACE(wire);
    silent_member silent;
    ASSERT_GT(silent.port(), 0);
    // timeout=2s: one member's attempt lasts 500 ms before the next member is tried.
    auto u = with_param(behind(url_, "127.0.0.1:" + std::to_string(silent.port())),
                        "timeout=2s&transport=" + wire);
    auto c = sqlock::connect(u);
    auto l = c.make_lock(unique_name("silent"));
    ASSERT_TRUE(l.try_lock_for(5s));
    l.unlock();
    // What the silent member was sent: HTTP/2's connection preface, or an HTTP/1.1 request.
    const auto got = silent.received();
    if (wire == "grpc")
      EXPECT_EQ(got.rfind("PRI * HTTP/2.0\r\n", 0), 0u) << got.substr(0, 40);
    else
      EXPECT_EQ(got.rfind("POST /v3/", 0), 0u) << got.substr(0, 40);
  }
}

}  // namespace
}  // namespace sqlock::test
