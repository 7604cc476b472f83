// A private 3-member etcd cluster for fault tests that must not touch the shared servers: its
// members can be stopped and started again, and one member can be cut off from its peers while
// clients still reach it (it then has no leader while the other two go on). The peers talk
// through TCP proxies (tests/support/tcp_proxy.hpp): a member's own proxy is blackholed, and
// the other proxies cut the connections it opens, recognised by its member ID, which etcd's
// peer requests carry (in the path and the X-Server-From header).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "etcd_env.hpp"
#include "tcp_proxy.hpp"
#include "test_env.hpp"

namespace sqlock::test::etcd_env {

class private_cluster {
 public:
  static constexpr int size = 3;

  /// Members 1..3 serve clients on `base_port` + 0, 2, 4 (their peers listen one above); short
  /// election timeouts (100 ms heartbeat, 500 ms election) so that leader loss shows quickly.
  explicit private_cluster(int base_port) : base_(base_port) {
    for (int i = 0; i < size; ++i)
      proxies_[i] = std::make_unique<tcp_proxy>("127.0.0.1", peer_port(i + 1));
    for (int i = 1; i <= size; ++i) start(i, "new");
    for (int i = 0; i < 100 && !healthy(); ++i) std::this_thread::sleep_for(100ms);
  }
  ~private_cluster() {
    heal();  // a member's graceful stop waits for its peer connections
    for (pid_t p : pids_)
      if (p > 0) ::kill(p, SIGKILL);
    for (pid_t p : pids_)
      if (p > 0) ::waitpid(p, nullptr, 0);
  }
  private_cluster(const private_cluster&) = delete;
  private_cluster& operator=(const private_cluster&) = delete;

  /// True when every member answers and the cluster has a leader.
  bool healthy() const {
    return sh(etcdctl_cmd(endpoints({1, 2, 3})) + "endpoint health 2>&1 | grep -c 'is healthy'") ==
           "3\n";
  }
  /// etcd://... with members `order` (1-based), tried in that order, and `query` ("?...").
  std::string url(std::initializer_list<int> order, const std::string& query = {}) const {
    return "etcd://" + endpoints(order) + "/private" + query;
  }
  /// Runs etcdctl against members `order`; its output.
  std::string etcdctl(std::initializer_list<int> order, const std::string& args) const {
    return sh(etcdctl_cmd(endpoints(order)) + args);
  }
  /// Stops member `i`: SIGTERM, SIGKILL when it has not ended 5 s later.
  void stop(int i) {
    pid_t& p = pids_[i - 1];
    if (p <= 0) return;
    ::kill(p, SIGTERM);
    for (int n = 0; n < 250 && ::waitpid(p, nullptr, WNOHANG) != p; ++n) {
      if (n == 249) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
      std::this_thread::sleep_for(20ms);
    }
    p = -1;
  }
  /// Starts stopped member `i` again (its data kept) and waits until it answers.
  void restart(int i) {
    start(i, "existing");
    for (int n = 0; n < 100; ++n) {
      if (etcdctl({i}, "endpoint health 2>&1").find("is healthy") != std::string::npos) return;
      std::this_thread::sleep_for(100ms);
    }
  }
  /// Member `i`'s ID as etcd writes it (hex), from `member list`.
  std::string member_id(int i) const {
    std::istringstream lines(etcdctl({1, 2, 3}, "member list 2>/dev/null"));
    const std::string name = ", m" + std::to_string(i) + ",";
    for (std::string line; std::getline(lines, line);)
      if (line.find(name) != std::string::npos) return line.substr(0, line.find(','));
    return {};
  }
  /// Cuts member `i` off from its peers (clients still reach it); heal() undoes it.
  void isolate(int i) {
    const auto id = member_id(i);
    ASSERT_FALSE(id.empty()) << "no ID for member " << i;
    for (int j = 1; j <= size; ++j) {
      auto& p = *proxies_[j - 1];
      if (j == i)
        p.blackhole(true);  // nothing reaches it
      else
        p.cut_matching(id);  // nothing it opens gets through
      p.reset_all();
    }
  }
  /// Lets every member reach every other again.
  void heal() {
    for (auto& p : proxies_) {
      p->cut_matching({});
      p->blackhole(false);
    }
  }
  /// Which member (1..3) leads now; 0 when none answers.
  int leader() const {
    for (int i = 1; i <= size; ++i) {
      auto out = etcdctl({i}, "endpoint status 2>/dev/null");
      // "host:port, id, version, size, is_leader, ...": the fifth field
      std::istringstream f(out);
      std::string field;
      for (int k = 0; k < 5 && std::getline(f, field, ','); ++k) {
      }
      if (field.find("true") != std::string::npos) return i;
    }
    return 0;
  }

 private:
  int client_port(int i) const { return base_ + 2 * (i - 1); }
  int peer_port(int i) const { return client_port(i) + 1; }
  std::string advertised_peer(int i) const {
    return "http://127.0.0.1:" + std::to_string(proxies_[i - 1]->port());
  }
  std::string endpoints(std::initializer_list<int> order) const {
    std::string out;
    for (int i : order)
      out += (out.empty() ? "" : ",") + ("127.0.0.1:" + std::to_string(client_port(i)));
    return out;
  }
  static std::string etcdctl_cmd(const std::string& endpoints) {
    return "ETCDCTL_API=3 timeout 5 etcdctl --endpoints=" + endpoints + " --command-timeout=2s ";
  }
  void start(int i, const std::string& state) {
    std::string cluster;
    for (int j = 1; j <= size; ++j)
      cluster += (j > 1 ? "," : "") + ("m" + std::to_string(j) + "=" + advertised_peer(j));
    const std::string d = dir_.path.string() + "/m" + std::to_string(i);
    const std::string name = "m" + std::to_string(i), data = d + "/data", log = d + "/log";
    const std::string client = "http://127.0.0.1:" + std::to_string(client_port(i));
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port(i));
    const std::string advertised = advertised_peer(i);
    const std::string token = "sqlock-private-" + std::to_string(base_);
    std::filesystem::create_directories(d);
    pid_t p = ::fork();
    if (p == 0) {
      ::execlp("etcd", "etcd", "--name", name.c_str(), "--data-dir", data.c_str(),
               "--listen-client-urls", client.c_str(), "--advertise-client-urls", client.c_str(),
               "--listen-peer-urls", peer.c_str(), "--initial-advertise-peer-urls",
               advertised.c_str(), "--initial-cluster", cluster.c_str(), "--initial-cluster-state",
               state.c_str(), "--initial-cluster-token", token.c_str(), "--heartbeat-interval",
               "100", "--election-timeout", "500", "--log-outputs", log.c_str(), "--logger", "zap",
               nullptr);
      ::_exit(127);
    }
    pids_[i - 1] = p;
  }

  int base_;
  temp_dir dir_;
  std::array<std::unique_ptr<tcp_proxy>, size> proxies_;
  std::array<pid_t, size> pids_{-1, -1, -1};
};

}  // namespace sqlock::test::etcd_env
