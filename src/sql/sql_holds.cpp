// The engine's hold operations: acquire attempts of every kind, renew and release, and the
// engine's acquisition (engine_acquisition.hpp), which clears the writer mark a waiting
// exclusive request left when it ends without the hold.
#include <utility>

#include "conflict_retry.hpp"
#include "sql_engine.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"

namespace sqlock::sql {
namespace {

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

std::unique_ptr<release_watch> engine_backend::watch_releases(const lock_request&) {
  return nullptr;
}

std::unique_ptr<acquisition> engine_backend::make_acquisition(const lock_request& req,
                                                              const wait_policy& policy) {
  return std::make_unique<engine_acquisition>(*this, req, policy, watch_releases(req));
}

engine_acquisition::engine_acquisition(engine_backend& b, lock_request req,
                                       const wait_policy& policy,
                                       std::unique_ptr<release_watch> watch)
    : backend_(b),
      req_(std::move(req)),
      watch_(std::move(watch)),
      initial_(policy.initial),
      cap_(policy.cap) {}

engine_acquisition::~engine_acquisition() {
  engine_acquisition::cancel();
}

std::optional<lease_info> engine_acquisition::attempt(steady_time deadline) {
  if (watch_) watch_->attempt_starts();
  return listed(backend_.attempt(req_, deadline, this));
}

std::optional<steady_time> engine_acquisition::arm(steady_time until, waker wake) {
  if (watch_) return watch_->arm(until, std::move(wake));
  return std::nullopt;
}

void engine_acquisition::disarm() noexcept {
  if (watch_) watch_->disarm();
}

void engine_acquisition::wait(steady_time until, const std::stop_token& stop) {
  if (watch_) return watch_->wait(until, stop);
  auto delay = backoff_delay(waits_++, initial_, cap_);
  sleep_until(std::min<steady_time>(std::chrono::steady_clock::now() + delay, until), stop);
}

void engine_acquisition::cancel() noexcept {
  listing_.leave();
  if (!std::exchange(marked_, false)) return;
  backend_.clear_writer_mark(req_.name, req_.owner);
}

void engine_acquisition::cancel_then(std::function<void()> then) noexcept {
  listing_.leave();
  if (!std::exchange(marked_, false)) return then();
  backend_.clear_writer_mark_then(req_.name, req_.owner, std::move(then));
}

void engine_backend::clear_writer_mark(const std::string& name, const std::string& owner) noexcept {
  try {
    params p;
    p.name = name;
    p.owner = owner;
    p.mode = mode();
    run(dialect_.clear_mark, p, std::chrono::steady_clock::now() + mark_clear_bound);
  } catch (...) {
  }
}

void engine_backend::clear_writer_mark_then(std::string name, std::string owner,
                                            std::function<void()> then) noexcept {
  if (marks_) return marks_->clear_then(std::move(name), std::move(owner), std::move(then));
  clear_writer_mark(name, owner);
  then();
}

std::optional<lease_info> engine_backend::try_acquire(const lock_request& req,
                                                      steady_time deadline) {
  return attempt(req, deadline, nullptr);
}

std::optional<lease_info> engine_backend::attempt(const lock_request& req, steady_time deadline,
                                                  engine_acquisition* a) {
  if (dialect_.max_name_chars > 0 && utf8_chars(req.name) > dialect_.max_name_chars)
    throw config_error("lock name '" + req.name + "' is longer than the " +
                       std::to_string(dialect_.max_name_chars) + " characters the " +
                       dialect_.mode + " layout's table holds");
  params p = params_for(req);
  const bool exclusive = req.kind == lock_kind::exclusive;
  // A waiting exclusive request marks itself so that new shared holders keep out; a single
  // try leaves no mark.
  auto* writer = exclusive && dialect_.kinds ? a : nullptr;
  if (writer) p.mark_ms = writer_mark.count();
  const operation& op = exclusive ? dialect_.acquire : dialect_.acquire_shared;
  conflict_retry races_left(deadline, milliseconds(20));  // optimistic mode's lost races
  for (;;) {
    rows r;
    try {
      // Within an acquisition a conflict is busy at once: the acquire loop tries again, each
      // time with a whole attempt's time. A single try retries it until its deadline.
      r = run(op, p, deadline, req.stop, a ? on_conflict::raise : on_conflict::retry);
    } catch (const pool_busy&) {
      return std::nullopt;  // nothing was asked: at the deadline that is a timeout, not an error
    } catch (const conflict_error&) {
      // A deadlock or lock-wait timeout: the routine rolled its transaction back, so nothing
      // of this attempt stays (no row, no mark of it). Busy: the acquire loop tries again
      // while the deadline allows; at the deadline the name was not obtained in time.
      return std::nullopt;
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
    if (!races_left.pause()) return std::nullopt;
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
