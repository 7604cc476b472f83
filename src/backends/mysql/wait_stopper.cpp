// A stopped GET_LOCK wait ended by repeated KILL QUERY from a second session, or by shutting
// its socket down.
#include "wait_stopper.hpp"

#include <sys/socket.h>

namespace sqlock::mysql::detail {

using sql::stop_grace;

wait_stopper::wait_stopper(sender send, std::uint64_t id, int fd, const std::stop_token& stop) {
  kills_.emplace(
      stop,
      [send = std::move(send), kill = "KILL QUERY " + std::to_string(id)] {
        send(kill, std::chrono::steady_clock::now() + stop_grace);
      },
      sql::stop_request_every, stop_grace,
      [fd] {
        if (fd >= 0) ::shutdown(fd, SHUT_RDWR);  // still ours: the wait has not ended
      });
}

wait_stopper::~wait_stopper() = default;

}  // namespace sqlock::mysql::detail
