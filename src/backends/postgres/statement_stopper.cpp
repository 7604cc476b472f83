// A stopped caller's statement ended by repeated cancel requests, or by closing its connection.
#include "statement_stopper.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace sqlock::postgres {

namespace {
// How long a stopped statement may still run before its connection is closed.
constexpr milliseconds stop_grace{500};
// The pause between two cancel requests, and how many are sent at most (together: the grace).
constexpr milliseconds cancel_retry{20};
constexpr int cancel_requests = 25;
}  // namespace

struct statement_stopper::cancels {
  std::shared_ptr<PGcancel> handle;
  std::mutex m;
  std::condition_variable cv;
  bool ended = false;  // the statement returned: no more requests

  // Asks the server to cancel the statement until it has ended (or the requests run out).
  void send_until_ended() {
    for (int i = 0; i < cancel_requests; ++i) {
      char why[256];
      (void)PQcancel(handle.get(), why, sizeof why);  // best effort: the link's grace backs it
      std::unique_lock lk(m);
      if (cv.wait_for(lk, cancel_retry, [this] { return ended; })) return;
    }
  }
};

statement_stopper::statement_stopper(link* l, const std::stop_token& stop)
    : link_(l), cancels_(std::make_shared<cancels>()), stopped_(stop) {
  if (!link_ || link_->closed() || stopped_.fd() < 0) return;
  cancels_->handle = std::shared_ptr<PGcancel>(link_->new_cancel(), PQfreeCancel);
  if (!cancels_->handle) return;
  link_->watch_stop(stopped_.fd(), stop_grace);
  on_stop_.emplace(stop, std::function<void()>([c = cancels_] {
                     try {
                       std::thread([c] { c->send_until_ended(); }).detach();
                     } catch (const std::system_error&) {
                       // No thread to spare: the link's grace still ends the statement.
                     }
                   }));
}

statement_stopper::~statement_stopper() {
  on_stop_.reset();  // waits for a callback that is running
  {
    std::lock_guard lk(cancels_->m);
    cancels_->ended = true;
  }
  cancels_->cv.notify_all();
  if (link_) link_->watch_stop(-1, {});
}

}  // namespace sqlock::postgres
