// A request repeated from a stop until the stopped call has ended.
#include "cancel_resender.hpp"

#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

namespace sqlock::sql {

struct cancel_resender::shared {
  std::function<void()> request, last;
  milliseconds every{}, grace{};
  std::mutex m;
  std::condition_variable cv;
  bool fired = false;  // the stop came
  bool ended = false;  // the call returned: nothing more

  void run() {
    const auto until = std::chrono::steady_clock::now() + grace;
    while (std::chrono::steady_clock::now() < until) {
      try {
        request();
      } catch (...) {
        // Best effort: the next one, or the last resort.
      }
      std::unique_lock lk(m);
      if (cv.wait_for(lk, every, [this] { return ended; })) return;
    }
    std::lock_guard lk(m);
    if (!ended && last) last();
  }
};

cancel_resender::cancel_resender(const std::stop_token& stop, std::function<void()> request,
                                 milliseconds every, milliseconds grace, std::function<void()> last)
    : shared_(std::make_shared<shared>()) {
  shared_->request = std::move(request);
  shared_->last = std::move(last);
  shared_->every = every;
  shared_->grace = grace;
  on_stop_.emplace(stop, std::function<void()>([s = shared_] {
                     {
                       std::lock_guard lk(s->m);
                       s->fired = true;
                     }
                     try {
                       std::thread([s] { s->run(); }).detach();
                     } catch (const std::system_error&) {
                       // No thread to spare: the call ends by its own deadline.
                     }
                   }));
}

cancel_resender::~cancel_resender() {
  on_stop_.reset();  // waits for a callback that is running
  {
    std::lock_guard lk(shared_->m);
    shared_->ended = true;
  }
  shared_->cv.notify_all();
}

bool cancel_resender::fired() const {
  std::lock_guard lk(shared_->m);
  return shared_->fired;
}

}  // namespace sqlock::sql
