// Helpers of the etcd tests: shell commands (etcdctl acts behind the backend's back), the
// endpoints of a URL, and a private one-member etcd a test may freeze or stop.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "freeze.hpp"
#include "sqlock/etcd/etcd.hpp"
#include "sqlock/url.hpp"
#include "test_env.hpp"

namespace sqlock::test::etcd_env {

using namespace std::chrono_literals;

// Runs a shell command; its standard output.
inline std::string sh(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf{};
  while (auto n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

// "127.0.0.1:22379,..." from an etcd:// URL, for etcdctl.
inline std::string endpoints_of(const std::string& u) {
  auto parsed = url::parse(u);
  std::string out;
  for (auto& h : parsed.hosts)
    out += (out.empty() ? "" : ",") + h.host + ":" + std::to_string(h.port);
  return out;
}

inline std::string prefix_of(const std::string& u) {
  auto p = url::parse(u).path;
  return p.substr(1);
}

// etcdctl against the members of `u`, with `args`.
inline std::string etcdctl(const std::string& u, const std::string& args) {
  return "etcdctl --endpoints=" + endpoints_of(u) + " " + args;
}

// The keys under lock `n` of the store at `u`, first created first, one per line.
inline std::string keys(const std::string& u, const std::string& n) {
  auto pfx = etcd::lock_prefix(prefix_of(u), n);
  return sh(etcdctl(u, "get --prefix --keys-only --order=ASCEND --sort-by=CREATE '" + pfx +
                           "' 2>/dev/null | sed '/^$/d'"));
}

// Revokes, behind the backend's back, the lease of a key `<...>/<lease id hex>` (+ newline).
inline void revoke_lease_of(const std::string& u, const std::string& key_line) {
  std::string lease_hex = key_line.substr(key_line.rfind('/') + 1);
  while (!lease_hex.empty() && lease_hex.back() == '\n') lease_hex.pop_back();
  sh(etcdctl(u, "lease revoke " + lease_hex + " >/dev/null"));
}

// A private one-member etcd that a test may freeze (SIGSTOP) or restart: the shared members are
// in use by the other tests at the same time.
class private_etcd {
 public:
  /// With `tls`: HTTPS with a CA, server and client certificates made here (openssl); with
  /// `client_certs` too, the member requires a client certificate.
  explicit private_etcd(int port, bool tls = false, bool client_certs = false)
      : port_(port), tls_(tls), client_certs_(client_certs) {
    if (tls_) make_certificates();
    spawn();
  }
  ~private_etcd() { stop(); }
  private_etcd(const private_etcd&) = delete;
  private_etcd& operator=(const private_etcd&) = delete;

  /// The URL of this member (with the TLS files when it has TLS), `userinfo` ("u:p@") inserted.
  std::string url(const std::string& userinfo = {}) const {
    std::string d = dir_.path.string();
    std::string u = std::string(tls_ ? "etcds://" : "etcd://") + userinfo +
                    "127.0.0.1:" + std::to_string(port_) + "/private";
    if (tls_) u += "?cacert=" + d + "/ca.crt";
    if (client_certs_) u += "&cert=" + d + "/client.crt&key=" + d + "/client.key";
    return u;
  }
  /// Runs etcdctl against this member; its output.
  std::string etcdctl(const std::string& args) const {
    std::string d = dir_.path.string();
    std::string tls = tls_ ? " --cacert=" + d + "/ca.crt" : "";
    if (client_certs_) tls += " --cert=" + d + "/client.crt --key=" + d + "/client.key";
    return sh(
        "ETCDCTL_API=3 timeout 5 etcdctl --endpoints=" + std::string(tls_ ? "https" : "http") +
        "://127.0.0.1:" + std::to_string(port_) + tls + " --command-timeout=2s " + args);
  }
  std::filesystem::path dir() const { return dir_.path; }
  /// True while the member runs.
  bool running() const { return pid_ > 0; }
  void freeze() { ASSERT_TRUE(freeze_process(pid_)) << "etcd did not stop"; }
  void thaw() { ::kill(pid_, SIGCONT); }
  /// Kills the member (SIGKILL) and starts it again on its data, as a crash and a supervisor's
  /// restart would; returns once it answers (running() says whether it did).
  void restart() {
    stop();
    spawn();
  }

 private:
  // Starts the member on its port and data directory; returns once it answers, or with
  // running() false when it failed to start.
  void spawn() {
    std::string c = std::to_string(port_), p = std::to_string(port_ + 1);
    std::string d = dir_.path.string();
    std::string scheme = tls_ ? "https://" : "http://";
    pid_ = ::fork();
    if (pid_ == 0) {
      std::string data = d + "/data", log = d + "/log";
      std::string peer = "http://127.0.0.1:" + p, client = scheme + "127.0.0.1:" + c;
      std::string cluster = "p=" + peer;
      std::string cert = d + "/server.crt", key = d + "/server.key", ca = d + "/ca.crt";
      // etcd 3.4 asks every client for a certificate once it has a trusted CA file, whatever
      // --client-cert-auth says: a member that does not require one gets no CA file.
      if (tls_ && client_certs_)
        ::execlp("etcd", "etcd", "--name", "p", "--data-dir", data.c_str(), "--listen-client-urls",
                 client.c_str(), "--advertise-client-urls", client.c_str(), "--listen-peer-urls",
                 peer.c_str(), "--initial-advertise-peer-urls", peer.c_str(), "--initial-cluster",
                 cluster.c_str(), "--log-outputs", log.c_str(), "--logger", "zap", "--cert-file",
                 cert.c_str(), "--key-file", key.c_str(), "--trusted-ca-file", ca.c_str(),
                 "--client-cert-auth", nullptr);
      else if (tls_)
        ::execlp("etcd", "etcd", "--name", "p", "--data-dir", data.c_str(), "--listen-client-urls",
                 client.c_str(), "--advertise-client-urls", client.c_str(), "--listen-peer-urls",
                 peer.c_str(), "--initial-advertise-peer-urls", peer.c_str(), "--initial-cluster",
                 cluster.c_str(), "--log-outputs", log.c_str(), "--logger", "zap", "--cert-file",
                 cert.c_str(), "--key-file", key.c_str(), nullptr);
      else
        ::execlp("etcd", "etcd", "--name", "p", "--data-dir", data.c_str(), "--listen-client-urls",
                 client.c_str(), "--advertise-client-urls", client.c_str(), "--listen-peer-urls",
                 peer.c_str(), "--initial-advertise-peer-urls", peer.c_str(), "--initial-cluster",
                 cluster.c_str(), "--log-outputs", log.c_str(), "--logger", "zap", nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {  // it failed to start (see its log)
        pid_ = -1;
        return;
      }
      if (etcdctl("endpoint health 2>&1").find("is healthy") != std::string::npos) return;
      std::this_thread::sleep_for(100ms);
    }
  }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  void make_certificates() {
    std::string d = dir_.path.string();
    std::string ext = d + "/san.cnf";
    sh("printf 'subjectAltName=IP:127.0.0.1\\n' > " + ext);
    sh("cd " + d +
       " && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=sqlock-test-ca "
       "-keyout ca.key -out ca.crt 2>/dev/null"
       " && for n in server client; do openssl req -newkey rsa:2048 -nodes -subj /CN=$n "
       "-keyout $n.key -out $n.csr 2>/dev/null && openssl x509 -req -in $n.csr -CA ca.crt "
       "-CAkey ca.key -CAcreateserial -days 2 -extfile san.cnf -out $n.crt 2>/dev/null; done");
  }

  int port_;
  bool tls_;
  bool client_certs_;
  temp_dir dir_;
  pid_t pid_ = -1;
};

}  // namespace sqlock::test::etcd_env
