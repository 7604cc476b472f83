// A driver connection as a session of the SQL engine's session pool (lock_session.hpp).
#include "lock_session.hpp"

namespace sqlock::mysql::detail {

namespace {

class lock_session final : public sql::pooled_session {
 public:
  lock_session(std::unique_ptr<detail::connection> c, wait_stopper::sender kill,
               milliseconds timeout)
      : c_(std::move(c)), kill_(std::move(kill)), timeout_(timeout) {}

  sql::rows run(const sql::operation& op, const sql::params& p, steady_time deadline) override {
    return c_->run(op, p, deadline);
  }
  void execute_script(std::string_view script) override { c_->execute_script(script); }
  sql::rows query(std::string_view text, steady_time deadline) override {
    return c_->query(text, deadline);
  }
  int socket() const override { return c_->socket(); }
  bool alive() override { return c_->alive(); }
  std::int64_t session_id(steady_time deadline) override {
    return static_cast<std::int64_t>(c_->server_id(deadline));
  }
  std::unique_ptr<sql::wait_breaker> break_wait_on(const std::stop_token& stop) override {
    if (!kill_) return nullptr;
    const auto id = c_->server_id(std::chrono::steady_clock::now() + timeout_);  // asked once
    return std::make_unique<wait_stopper>(kill_, id, c_->socket(), stop);
  }

 private:
  std::unique_ptr<detail::connection> c_;  // the driver's (not the engine's) connection
  wait_stopper::sender kill_;
  milliseconds timeout_;
};

}  // namespace

sql::session_driver lock_sessions(const options& o,
                                  std::shared_ptr<sql::connection_counter> counter,
                                  wait_stopper::sender kill) {
  return [o, counter = std::move(counter), kill = std::move(kill)](steady_time) {
    return std::make_unique<lock_session>(open_connection(o, counter), kill, o.timeout);
  };
}

}  // namespace sqlock::mysql::detail
