// Opening a session sqlock owns, by a deadline. libpq and libmariadb connect with timeouts
// counted in whole seconds (libpq: at least 2), so a remote open runs on a helper thread: the
// caller waits for it until its deadline and then gives up with connection_error; the helper
// finishes on its own (the clients' connect timeouts end it) and closes what it opened.
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "soci_connection.hpp"

namespace sqlock::soci::detail {
namespace {

std::unique_ptr<::soci::session> open_now(const flavor& f, const std::string& connect,
                                          const options& o) {
  std::unique_ptr<::soci::session> s;
  guarded(
      f, "cannot open SOCI " + f.soci_name() + " session",
      [&] {
        s = f.open(connect);
        f.prepare_session(*s, o, true);
      },
      true);
  return s;
}

// What the helper thread hands over; shared so that an abandoned open cleans up after itself.
struct pending_open {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;
  std::unique_ptr<::soci::session> session;
  std::exception_ptr error;
};

}  // namespace

std::unique_ptr<::soci::session> open_session(const flavor& f, const std::string& connect,
                                              const options& o, steady_time deadline) {
  if (!f.remote() || deadline == steady_time::max()) return open_now(f, connect, o);
  auto p = std::make_shared<pending_open>();
  std::thread([p, &f, connect, o] {
    std::unique_ptr<::soci::session> s;
    std::exception_ptr e;
    try {
      s = open_now(f, connect, o);
    } catch (...) {
      e = std::current_exception();
    }
    std::lock_guard g(p->m);
    p->done = true;
    if (p->abandoned) return;  // `s` is closed here, on this thread
    p->session = std::move(s);
    p->error = e;
    p->cv.notify_all();
  }).detach();
  std::unique_lock g(p->m);
  if (!p->cv.wait_until(g, deadline, [&] { return p->done; })) {
    p->abandoned = true;
    throw connection_error("cannot open SOCI " + f.soci_name() +
                           " session: no connection by the deadline");
  }
  if (p->error) std::rethrow_exception(p->error);
  return std::move(p->session);
}

}  // namespace sqlock::soci::detail
