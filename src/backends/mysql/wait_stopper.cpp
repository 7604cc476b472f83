// A stopped GET_LOCK wait ended by repeated KILL QUERY from a second session, or by shutting
// its socket down.
#include "wait_stopper.hpp"

#include <sys/socket.h>

#include <memory>

#include "connector.hpp"

namespace sqlock::mysql::detail {

namespace {
using sql::stop_grace;

// The second session and what it sends; opened on the first kill, again after a failure.
struct killer {
  options opts;
  std::string statement;
  std::unique_ptr<connection> session;
  void kill() {
    try {
      if (!session) session = open_connection(opts);
      session->query(statement, std::chrono::steady_clock::now() + stop_grace);
    } catch (...) {
      session.reset();
      throw;
    }
  }
};
}  // namespace

wait_stopper::wait_stopper(const options& o, std::uint64_t id, int fd,
                           const std::stop_token& stop) {
  auto k = std::make_shared<killer>(killer{o, "KILL QUERY " + std::to_string(id), nullptr});
  kills_.emplace(
      stop, [k] { k->kill(); }, sql::stop_request_every, stop_grace,
      [fd] {
        if (fd >= 0) ::shutdown(fd, SHUT_RDWR);  // still ours: the wait has not ended
      });
}

wait_stopper::~wait_stopper() = default;

}  // namespace sqlock::mysql::detail
