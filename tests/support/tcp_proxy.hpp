// A small TCP proxy for fault tests (the kernel here has no netem): clients connect to
// 127.0.0.1:port() and are forwarded to the real server; a test can blackhole every connection
// (nothing is forwarded, connections stay open, as with a dead network path), drop only the
// server's answers, reset them all, cut the connections of one client by what it sends first,
// or delay every chunk it forwards.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace sqlock::test {

class tcp_proxy {
 public:
  /// Listens on an ephemeral loopback port, forwarding to up_host:up_port (IPv4 address).
  tcp_proxy(std::string up_host, int up_port) : host_(std::move(up_host)), up_port_(up_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
        ::listen(listen_fd_, 64) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("tcp_proxy: cannot listen");
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~tcp_proxy() {
    stop_ = true;
    acceptor_.join();
    ::close(listen_fd_);
    std::lock_guard g(m_);
    for (auto& c : conns_) c.pump.join();
  }
  tcp_proxy(const tcp_proxy&) = delete;
  tcp_proxy& operator=(const tcp_proxy&) = delete;

  /// The port clients connect to.
  int port() const { return port_; }
  /// Stops (true) or resumes (false) forwarding on every connection, new ones included.
  void blackhole(bool on) { blackhole_ = on; }
  /// Resets (RST) every open connection; new connections are still accepted.
  void reset_all() { ++reset_generation_; }
  /// Forwards requests but drops every answer (true), on every connection, new ones included:
  /// the server acts on what it is sent and the client hears nothing back.
  void drop_replies(bool on) { drop_replies_ = on; }
  /// Ends drop_replies(true) as a lost answer ends on a real network: the connections that lost
  /// bytes are reset (a TCP stream never resumes after a gap), then answers flow again on new
  /// ones. No chunk received after the reset is forwarded on a connection from before it.
  void end_drop_with_reset() {
    ++reset_generation_;
    drop_replies_ = false;
  }
  /// Resets every connection, open or new, as soon as its client sends a chunk containing
  /// `pattern` (before forwarding it; "" = none): one client of several is cut off by what its
  /// requests say (a pattern split across two chunks is not recognised).
  void cut_matching(std::string pattern) {
    std::lock_guard g(m_);
    cutting_ = !pattern.empty();
    cut_ = std::move(pattern);
  }
  /// Holds every chunk this long before forwarding it (0 = no delay).
  void delay(std::chrono::milliseconds d) { delay_ms_ = static_cast<int>(d.count()); }

 private:
  struct conn {
    std::thread pump;
  };

  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<std::uint16_t>(up_port_));
      ::inet_pton(AF_INET, host_.c_str(), &a.sin_addr);
      if (::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(server);
        ::close(client);
        continue;
      }
      // Each chunk goes on at once, as the endpoints' own sockets send theirs: Nagle's
      // algorithm here would hold a small second write until the first one's delayed ACK
      // (up to 40 ms), a stall no direct connection has.
      const int on = 1;
      ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      std::lock_guard g(m_);
      conns_.push_back({std::thread([this, client, server] { pump(client, server); })});
    }
  }

  static void hard_close(int fd) {
    linger l{1, 0};  // close with RST
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd);
  }

  void pump(int a, int b) {
    const unsigned generation = reset_generation_;
    char buf[16384];
    while (!stop_) {
      if (reset_generation_ != generation) {
        hard_close(a);
        hard_close(b);
        return;
      }
      if (blackhole_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
      if (::poll(p, 2, 20) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        int from = i == 0 ? a : b, to = i == 0 ? b : a;
        ssize_t n = ::recv(from, buf, sizeof buf, 0);
        if (n <= 0) {
          ::close(a);
          ::close(b);
          return;
        }
        if (i == 0 && cutting_ && cut(std::string_view(buf, static_cast<std::size_t>(n)))) {
          hard_close(a);
          hard_close(b);
          return;
        }
        if (i == 1 && drop_replies_) continue;  // from the server
        // Read after the drop flag: a pump that sees answers flow again after
        // end_drop_with_reset() also sees its reset.
        if (reset_generation_ != generation) {
          hard_close(a);
          hard_close(b);
          return;
        }
        if (int d = delay_ms_; d > 0) std::this_thread::sleep_for(std::chrono::milliseconds(d));
        for (ssize_t off = 0; off < n;) {
          ssize_t w = ::send(to, buf + off, static_cast<std::size_t>(n - off), MSG_NOSIGNAL);
          if (w <= 0) {
            ::close(a);
            ::close(b);
            return;
          }
          off += w;
        }
      }
    }
    ::close(a);
    ::close(b);
  }

  bool cut(std::string_view chunk) {
    std::lock_guard g(m_);
    return !cut_.empty() && chunk.find(cut_) != std::string_view::npos;
  }

  std::string host_;
  int up_port_ = 0;
  int port_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false}, blackhole_{false}, drop_replies_{false}, cutting_{false};
  std::atomic<unsigned> reset_generation_{0};
  std::atomic<int> delay_ms_{0};
  std::mutex m_;  // conns_, cut_
  std::list<conn> conns_;
  std::string cut_;
  std::thread acceptor_;
};

/// `url` with its "host:port" replaced by 127.0.0.1:`to_port` (to reach the server through a
/// proxy); std::runtime_error when the URL does not contain them.
inline std::string with_host_port(std::string url, const std::string& host, int port, int to_port) {
  std::string from = host + ":" + std::to_string(port);
  auto at = url.find(from);
  if (at == std::string::npos) throw std::runtime_error("no " + from + " in the URL");
  return url.replace(at, from.size(), "127.0.0.1:" + std::to_string(to_port));
}

}  // namespace sqlock::test
