// A stopped GET_LOCK wait ended by repeated KILL QUERY from a second session, or by shutting
// its socket down.
#include "wait_stopper.hpp"

#include <sys/socket.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "connector.hpp"

namespace sqlock::mysql::detail {

namespace {
using clock = std::chrono::steady_clock;
// The pause between two kills, and how long the wait may go on after the stop.
constexpr milliseconds kill_retry{20};
constexpr milliseconds stop_grace{500};
}  // namespace

struct wait_stopper::kills {
  options opts;
  std::uint64_t id = 0;
  int fd = -1;
  std::mutex m;
  std::condition_variable cv;
  bool fired = false;  // the stop came
  bool ended = false;  // the wait returned: no more kills, the socket is no longer ours

  // Kills the session's query until the wait has ended; at the grace's end, shuts its socket.
  void run() {
    const auto until = clock::now() + stop_grace;
    std::unique_ptr<connection> killer;
    const std::string kill = "KILL QUERY " + std::to_string(id);
    while (clock::now() < until) {
      try {
        if (!killer) killer = open_connection(opts);
        killer->query(kill, until);
      } catch (const std::exception&) {
        killer.reset();  // no session to kill from (or the kill failed): the socket is left
      }
      std::unique_lock lk(m);
      if (cv.wait_for(lk, kill_retry, [this] { return ended; })) return;
    }
    std::lock_guard lk(m);
    if (!ended && fd >= 0) ::shutdown(fd, SHUT_RDWR);
  }
};

wait_stopper::wait_stopper(const options& o, std::uint64_t id, int fd, const std::stop_token& stop)
    : kills_(std::make_shared<kills>()) {
  kills_->opts = o;
  kills_->id = id;
  kills_->fd = fd;
  on_stop_.emplace(stop, std::function<void()>([k = kills_] {
                     {
                       std::lock_guard lk(k->m);
                       k->fired = true;
                     }
                     try {
                       std::thread([k] { k->run(); }).detach();
                     } catch (const std::system_error&) {
                       // No thread to spare: the wait ends at its slice's end.
                     }
                   }));
}

wait_stopper::~wait_stopper() {
  on_stop_.reset();  // waits for a callback that is running
  {
    std::lock_guard lk(kills_->m);
    kills_->ended = true;
  }
  kills_->cv.notify_all();
}

bool wait_stopper::fired() const {
  std::lock_guard lk(kills_->m);
  return kills_->fired;
}

}  // namespace sqlock::mysql::detail
