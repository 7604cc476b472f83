// The session of a ZooKeeper backend over its life (see zookeeper_keeper.hpp).
#include "zookeeper_keeper.hpp"

#include <cerrno>
#include <cstring>
#include <thread>

namespace sqlock::zookeeper::detail {

session_keeper::session_keeper(const options& o, counters& stats,
                               std::function<void(std::uint64_t)> on_gone,
                               std::function<void(session&, steady_time)> prepare)
    : opts_(o), stats_(stats), on_gone_(std::move(on_gone)), prepare_(std::move(prepare)) {
  std::lock_guard g(m_);
  session_ = start();
}

std::shared_ptr<session> session_keeper::current() {
  std::lock_guard g(m_);
  return session_;
}

void session_keeper::close_now() {
  std::shared_ptr<session> s;
  {
    std::lock_guard g(m_);
    closed_ = true;
    s = std::move(session_);
  }
  if (!s) return;
  s->begin_close();
  // Calls in flight keep the session until they notice (within 50 ms); the last reference
  // closes the handle. Wait a little so that normally this call closes it.
  auto until = clock::now() + std::chrono::seconds(2);
  while (s.use_count() > 1 && clock::now() < until) std::this_thread::sleep_for(milliseconds(5));
  s.reset();
}

std::shared_ptr<session> session_keeper::live(steady_time until) {
  std::shared_ptr<session> s;
  {
    std::lock_guard g(m_);
    if (closed_) throw connection_error("ZooKeeper backend was closed");
    if (!session_ || session_->gone()) {
      session_.reset();  // the old handle closes once no call uses it any more
      session_ = start();
    }
    s = session_;
  }
  if (!s->wait_connected(until)) {
    if (s->auth_failed) throw auth_error("ZooKeeper refused the session's authentication");
    if (s->gone()) throw session_gone("ZooKeeper session expired");
    auto detail = last_client_error();
    throw connection_error("no ZooKeeper session with " + opts_.hosts + " by the deadline" +
                           (detail.empty() ? std::string() : "; client: " + detail));
  }
  set_up(*s, until);
  return s;
}

// Once per session: the digest authentication's answer, and the base path.
void session_keeper::set_up(session& s, steady_time until) {
  std::unique_lock lk(s.setup_m, until);
  if (!lk.owns_lock()) throw connection_error("ZooKeeper session set-up did not finish in time");
  if (s.ready) return;
  // Sent once connected (before, the client refuses it); it re-sends it on every reconnect.
  if (!opts_.user.empty() && !s.auth) s.auth = add_auth(s, opts_.user + ":" + opts_.password);
  if (s.auth) {
    int rc = wait_auth(s, until);
    if (rc == ZAUTHFAILED) throw auth_error("ZooKeeper digest authentication failed");
    if (rc != ZOK) fail(rc, "add_auth(digest)");
  }
  prepare_(s, until);
  s.ready = true;
}

// Starts a handle; the session is established in the background (calls wait for it).
std::shared_ptr<session> session_keeper::start() {
  auto s = std::make_shared<session>();
  s->epoch = ++epoch_;
  s->stats = &stats_;
  s->on_gone = on_gone_;
  errno = 0;
  s->zh = zookeeper_init2(opts_.hosts.c_str(), session_watcher,
                          static_cast<int>(opts_.session_timeout.count()), nullptr, s.get(), 0,
                          log_callback);
  if (!s->zh) {
    int e = errno;
    if (e == EINVAL)
      throw config_error("ZooKeeper hosts '" + opts_.hosts + "' are not valid host:port pairs");
    throw connection_error("ZooKeeper client could not start for '" + opts_.hosts +
                           "': " + std::strerror(e));
  }
  // By default the client re-resolves the host names every time it polls its socket: a
  // getaddrinfo() per loop (a netlink query each) that also holds a glibc lock a fork() in
  // another thread can inherit forever. Resolve at connect and on connection loss only.
  zoo_set_servers_resolution_delay(s->zh, -1);
  return s;
}

}  // namespace sqlock::zookeeper::detail
