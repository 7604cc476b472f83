// The engine's list of waiting requests (engine_backend::waiting()) and what feeds it: a
// request that keeps waiting is written to the store by this client's recorder (a hold_recorder
// that also writes the ends of what it wrote and writes a live row again before it goes
// stale), off the request's lock path; wait_listing ties a request's place in it to its
// acquisition.
#include "sql_engine.hpp"

namespace sqlock::sql {
namespace {

// A waiting request is written once it has waited this long: a shorter wait (a contended
// handoff takes a few hundred microseconds) costs the store nothing.
constexpr milliseconds wait_record_delay{10};
// A written row lives this long unless written again; its client writes it again every
// wait_rewrite while the request waits, so a client that dies leaves it at most this long.
constexpr milliseconds wait_row_life{90000};
constexpr milliseconds wait_rewrite{30000};
// How long closing a client waits for its recorder to write what it still has (the ends of
// its requests' waits: else their rows stay until wait_row_life).
constexpr milliseconds wait_close_bound{1000};

}  // namespace

engine_backend::~engine_backend() {
  marks_.reset();  // removes what it still has, through the pool
  std::unique_ptr<hold_recorder> recorder;
  {
    std::lock_guard lk(waits_mutex_);
    recorder = std::move(waits_);
  }
  if (recorder) recorder->flush(std::chrono::steady_clock::now() + wait_close_bound);
}

void engine_backend::wait_began(const lock_request& req) {
  if (!waiters()) return;
  hold_recorder* recorder = nullptr;
  {
    std::lock_guard lk(waits_mutex_);
    if (!waits_) {
      waits_ = std::make_unique<hold_recorder>(
          [this](const hold_recorder::batch& b, steady_time deadline) {
            params p;
            p.waits = dialect_.encode_waits(b);
            p.lease_ms = wait_row_life.count();
            run(dialect_.record_waits, p, deadline);
          },
          wait_record_delay, io_timeout_, hold_recorder::upkeep{true, wait_rewrite});
    }
    recorder = waits_.get();
  }
  recorder->held({req.name, req.owner, req.holder, 0, 0, std::chrono::steady_clock::now(), req.kind,
                  req.permits});
}

void engine_backend::wait_ended(const lock_request& req) noexcept {
  try {
    std::lock_guard lk(waits_mutex_);
    if (waits_) waits_->released(req.name, req.owner);
  } catch (...) {  // out of memory queueing the end: the row goes stale by itself
  }
}

std::vector<waiting_request> engine_backend::waiting(std::string_view prefix) {
  const auto deadline = admin_deadline();
  hold_recorder* recorder = nullptr;
  {
    std::lock_guard lk(waits_mutex_);
    recorder = waits_.get();  // lives as long as this backend
  }
  if (recorder) recorder->flush(deadline);  // this client's own requests are written first
  params p;
  p.prefix = std::string(prefix);
  p.mode = dialect_.mode;
  std::vector<waiting_request> out;
  for (auto& r : run(dialect_.waiting, p, deadline)) {
    if (r.size() < 6)
      throw backend_error("waiting returned " + std::to_string(r.size()) + " columns");
    waiting_request w;
    w.name = r[0].value_or("");
    w.owner = r[1].value_or("");
    w.holder = r[2].value_or("");
    w.kind = decode_kind(r[3]);
    w.permits = r[4] ? static_cast<std::uint32_t>(decode_u64(r[4], "permits")) : 0;
    w.since = r[5].value_or("");
    out.push_back(std::move(w));  // position 0: the engine's stores keep no queue order
  }
  return out;
}

void wait_listing::after_attempt(bool obtained) {
  if (obtained || listed_) return;
  b_.wait_began(req_);
  listed_ = true;
}

void wait_listing::leave() noexcept {
  if (std::exchange(listed_, false)) b_.wait_ended(req_);
}

}  // namespace sqlock::sql
