// The engine's hold operations: acquire attempts of every kind, renew and release, and the wait
// state that clears the writer mark an exclusive acquire() call left when that call ends.
#include <thread>

#include "sql_engine.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"

namespace sqlock::sql {
namespace {

// The wait of one exclusive acquire() call on a dialect with kinds: the subclass's notification
// wait (or, without one, capped jittered backoff) plus what the call's attempts left on the
// server. A busy attempt refreshes the call's writer mark; when the call ends without the hold
// (timeout, error) the mark is removed at once rather than left to its short expiry, so new
// shared holders are not kept out by a writer that stopped waiting.
class writer_wait final : public wait_state {
 public:
  writer_wait(engine_backend& b, std::unique_ptr<wait_state> inner, const lock_request& req)
      : backend_(b), inner_(std::move(inner)) {
    clear_.name = req.name;
    clear_.owner = req.owner;
    clear_.mode = b.mode();
  }
  ~writer_wait() override {
    if (!marked_) return;
    try {  // bounded: the mark also expires by itself
      backend_.run(backend_.get_dialect().clear_mark, clear_,
                   std::chrono::steady_clock::now() + clear_bound);
    } catch (...) {
    }
  }
  writer_wait(const writer_wait&) = delete;
  writer_wait& operator=(const writer_wait&) = delete;

  void wait(steady_time until, const std::stop_token& stop) override {
    if (inner_) return inner_->wait(until, stop);
    auto delay = backoff_delay(waits_++, milliseconds(2), milliseconds(100));
    sleep_until(std::min<steady_time>(std::chrono::steady_clock::now() + delay, until), stop);
  }

  wait_state* inner() const noexcept { return inner_.get(); }
  void marked(bool on) noexcept { marked_ = on; }

 private:
  static constexpr milliseconds clear_bound{1000};  // one short call, past the caller's deadline

  engine_backend& backend_;
  std::unique_ptr<wait_state> inner_;
  params clear_;
  bool marked_ = false;
  unsigned waits_ = 0;
};

// Characters of UTF-8 text (bytes that do not continue a sequence).
std::size_t utf8_chars(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

void kind_mismatch(const lock_request& req, std::string_view status) {
  auto rest = status.substr(status.find(':') + 1);
  auto colon = rest.find(':');
  std::string kind(rest.substr(0, colon));
  std::string n(colon == std::string_view::npos ? "" : rest.substr(colon + 1));
  std::string held = kind == "permit" ? "a semaphore of " + n + " permits" : "a " + kind + " lock";
  std::string asked = req.kind == lock_kind::permit
                          ? std::to_string(req.permits) + " permits"
                          : std::string("a ") + to_string(req.kind) + " hold";
  throw config_error("lock '" + req.name + "' is held as " + held + "; this request asked for " +
                     asked +
                     ": every user of a name must use it the same way (the same kind, and the "
                     "same number of permits)");
}

std::unique_ptr<wait_state> engine_backend::release_watch(const lock_request&) {
  return nullptr;
}

std::unique_ptr<wait_state> engine_backend::open_wait(const lock_request& req) {
  auto inner = release_watch(req);
  if (req.kind != lock_kind::exclusive || !dialect_.kinds) return inner;
  return std::make_unique<writer_wait>(*this, std::move(inner), req);
}

wait_state* engine_backend::inner_wait(wait_state* ws) {
  auto* w = dynamic_cast<writer_wait*>(ws);
  return w ? w->inner() : ws;
}

std::optional<lease_info> engine_backend::try_acquire(const lock_request& req, steady_time deadline,
                                                      wait_state* ws) {
  if (dialect_.max_name_chars > 0 && utf8_chars(req.name) > dialect_.max_name_chars)
    throw config_error("lock name '" + req.name + "' is longer than the " +
                       std::to_string(dialect_.max_name_chars) + " characters the " +
                       dialect_.mode + " layout's table holds");
  params p = params_for(req);
  const bool exclusive = req.kind == lock_kind::exclusive;
  auto* writer = dynamic_cast<writer_wait*>(ws);
  if (writer) p.mark_ms = writer_mark.count();  // a try_lock() (no wait state) leaves no mark
  const operation& op = exclusive ? dialect_.acquire : dialect_.acquire_shared;
  for (unsigned attempt = 0;; ++attempt) {
    rows r;
    try {
      r = run(op, p, deadline, req.stop);
    } catch (const pool_busy&) {
      return std::nullopt;  // nothing was asked: at the deadline that is a timeout, not an error
    }
    if (!r.empty() && !r[0].empty() && r[0][0]) {
      if (writer) writer->marked(false);  // the acquire removed the call's mark
      lease_info l{req.name, req.owner, decode_u64(r[0][0], "fence"), nullptr};
      l.kind = req.kind;  // all renew and release need to know: which table holds it
      return l;
    }
    std::string_view status;
    if (!r.empty() && r[0].size() > 1 && r[0][1]) status = *r[0][1];
    if (status.substr(0, 9) == "mismatch:") kind_mismatch(req, status);
    if (status != "retry") {
      if (writer) writer->marked(true);
      return std::nullopt;
    }
    // Optimistic mode lost a compare-and-set race to a writer that changed the row between
    // our read and our write: back off with jitter and read again while the deadline allows
    // (the lock may have been free all along); at the deadline it counts as busy.
    auto pause = backoff_delay(attempt, milliseconds(1), milliseconds(20));
    if (std::chrono::steady_clock::now() + pause >= deadline) return std::nullopt;
    std::this_thread::sleep_for(pause);
  }
}

bool engine_backend::renew(const lease_info& l, milliseconds d, steady_time deadline) {
  // Servers renew every kind in one routine; SQLite's scripts need one per table.
  const bool shared =
      dialect_.kinds && l.kind != lock_kind::exclusive && !dialect_.renew_shared.statements.empty();
  try {
    return says_true(
        run(shared ? dialect_.renew_shared : dialect_.renew, params_for(l, d), deadline));
  } catch (const read_only_error&) {
    return false;  // the server turned read-only (a standby now): the hold cannot be kept there
  }
}

bool engine_backend::release(const lease_info& l, steady_time deadline) {
  // By kind alone, so that a hold whose grant was never answered (orphan_releases) is found.
  const bool shared = dialect_.kinds && l.kind != lock_kind::exclusive;
  return says_true(
      run(shared ? dialect_.release_shared : dialect_.release, params_for(l), deadline));
}

}  // namespace sqlock::sql
