// A stopped caller's statement ended by repeated cancel requests, or by closing its connection.
#include "statement_stopper.hpp"

#include <memory>

namespace sqlock::postgres {

statement_stopper::statement_stopper(libpq_connection* l, const std::stop_token& stop, bool cancel)
    : link_(l), stop_(stop), stopped_(stop) {
  if (!link_ || link_->closed() || stopped_.fd() < 0) return;
  if (!cancel) {
    link_->watch_stop(stopped_.fd(), sql::stop_grace);
    return;
  }
  std::shared_ptr<PGcancel> handle(link_->new_cancel(), PQfreeCancel);
  if (!handle) return;
  link_->watch_stop(stopped_.fd(),
                    sql::stop_grace);  // the last resort: the connection closes itself
  cancels_.emplace(
      stop,
      [handle] {
        char why[256];
        (void)PQcancel(handle.get(), why, sizeof why);  // best effort: repeated, then the close
      },
      sql::stop_request_every, sql::stop_grace);
}

statement_stopper::~statement_stopper() {
  cancels_.reset();
  if (link_) link_->watch_stop(-1, {});
}

}  // namespace sqlock::postgres
