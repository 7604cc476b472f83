// Connections, pool, script calls and error mapping (see the header).
#include "redis_connection.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"

namespace sqlock::redis::detail {

namespace {

// The first word of an error reply ("NOSCRIPT", "WRONGPASS", ...).
std::string error_code(std::string_view text) {
  auto sp = text.find(' ');
  return std::string(text.substr(0, sp));
}

std::vector<const char*> argv_ptrs(const std::vector<std::string>& argv,
                                   std::vector<size_t>& lens) {
  std::vector<const char*> p;
  p.reserve(argv.size());
  lens.clear();
  for (const auto& a : argv) {
    p.push_back(a.data());
    lens.push_back(a.size());
  }
  return p;
}

}  // namespace

milliseconds reconnect_backoff(milliseconds previous) {
  return previous.count() == 0 ? milliseconds(25)
                               : std::min<milliseconds>(previous * 2, milliseconds(1000));
}

void reply_deleter::operator()(redisReply* r) const noexcept {
  if (r) freeReplyObject(r);
}

// ---- the one mapping of server error replies ----
void throw_reply_error(const redisReply& r, const std::string& where) {
  std::string text(r.str ? std::string(r.str, r.len) : std::string("unknown error"));
  std::string code = error_code(text);
  std::string msg = where + ": " + text;
  if (code == "NOAUTH" || code == "WRONGPASS" || code == "NOPERM") throw auth_error(msg);
  if (code == "WRONGTYPE") throw config_error(msg);
  if (code == "LOADING" || code == "BUSY" || code == "TRYAGAIN" || code == "MASTERDOWN" ||
      code == "READONLY" || code == "CLUSTERDOWN" || code == "OOM")
    throw connection_error(msg);
  if (code == "MOVED" || code == "ASK" || code == "CROSSSLOT")
    throw unsupported(msg + " (Redis Cluster redirections are not followed: use one server)");
  throw backend_error(msg, code);
}

bool reply_view::is_error() const {
  return r && r->type == REDIS_REPLY_ERROR;
}

std::string_view reply_view::error_text() const {
  if (!is_error() || !r->str) return {};
  return {r->str, r->len};
}

long long reply_view::integer(const std::string& what) const {
  if (r && r->type == REDIS_REPLY_INTEGER) return r->integer;
  if (r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)) {
    try {
      return std::stoll(std::string(r->str, r->len));
    } catch (const std::exception&) {
    }
  }
  if (is_error()) throw_reply_error(*r, what);
  throw backend_error(what + ": unexpected reply from Redis (expected an integer)");
}

std::string reply_view::str() const {
  if (!r) return {};
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      return std::string(r->str, r->len);
    case REDIS_REPLY_INTEGER:
      return std::to_string(r->integer);
    default:
      return {};
  }
}

std::size_t reply_view::size(const std::string& what) const {
  if (r && r->type == REDIS_REPLY_ARRAY) return r->elements;
  if (is_error()) throw_reply_error(*r, what);
  throw backend_error(what + ": unexpected reply from Redis (expected an array)");
}

reply_view reply_view::at(std::size_t i) const {
  if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements)
    throw backend_error("unexpected reply from Redis (array too short)");
  return reply_view{r->element[i]};
}

// ---- connection ----

namespace {
// Time left until `until`, at least 1 ms (hiredis takes 0 as "no timeout").
std::chrono::microseconds left_until(steady_time until) {
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      until - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::microseconds(1000));
}
timeval to_timeval_us(std::chrono::microseconds d) {
  timeval tv{};
  tv.tv_sec = static_cast<decltype(tv.tv_sec)>(d.count() / 1000000);
  tv.tv_usec = static_cast<decltype(tv.tv_usec)>(d.count() % 1000000);
  return tv;
}
}  // namespace

connection::connection(const node_address& addr, const settings& s, steady_time until)
    : label_(addr.host + ":" + std::to_string(addr.port)) {
  const auto connect_for = std::min<std::chrono::microseconds>(
      left_until(until), std::chrono::microseconds(s.connect_timeout));
  c_ = redisConnectWithTimeout(addr.host.c_str(), addr.port, to_timeval_us(connect_for));
  if (!c_) throw connection_error("Redis " + label_ + ": cannot allocate a connection");
  if (c_->err) {
    std::string msg = "Redis " + label_ + ": cannot connect: " + c_->errstr;
    redisFree(c_);
    c_ = nullptr;
    throw connection_error(msg);
  }
  try {
    bound(until);
    redisEnableKeepAlive(c_);
    if (!s.password.empty()) {
      std::vector<std::string> auth = {"AUTH"};
      if (!s.user.empty()) auth.push_back(s.user);
      auth.push_back(s.password);
      auto r = command(auth);
      if (reply_view{r.get()}.is_error()) throw_reply_error(*r, "Redis " + label_ + " AUTH");
    }
    if (s.db != 0) {
      auto r = command({"SELECT", std::to_string(s.db)});
      if (reply_view{r.get()}.is_error()) throw_reply_error(*r, "Redis " + label_ + " SELECT");
    }
  } catch (...) {
    redisFree(c_);
    c_ = nullptr;
    throw;
  }
}

connection::~connection() {
  // Replies never to be read: those releases are sent again (release_book).
  if (book_ && !owed_.empty()) book_->unanswered(std::move(owed_));
  if (c_) redisFree(c_);
}

void connection::bound(steady_time until) {
  if (c_) redisSetTimeout(c_, to_timeval_us(left_until(until)));
}

void connection::fail(const char* what) {
  broken_ = true;
  std::string msg =
      "Redis " + label_ + ": " + what + ": " + (c_->err ? c_->errstr : "unknown error");
  if (c_->err == REDIS_ERR_PROTOCOL) throw backend_error(msg, "PROTOCOL");
  throw connection_error(msg);
}

reply_ptr connection::command(const std::vector<std::string>& argv) {
  append(argv);
  flush();
  return read();
}

void connection::append(const std::vector<std::string>& argv) {
  if (broken_) throw connection_error("Redis " + label_ + ": connection is broken");
  std::vector<size_t> lens;
  auto p = argv_ptrs(argv, lens);
  if (redisAppendCommandArgv(c_, static_cast<int>(p.size()), p.data(), lens.data()) != REDIS_OK)
    fail("cannot queue command");
}

void connection::flush() {
  int done = 0;
  while (!done) {
    if (redisBufferWrite(c_, &done) != REDIS_OK) fail("write failed");
  }
}

reply_ptr connection::read() {
  settle();
  void* r = nullptr;
  if (redisGetReply(c_, &r) != REDIS_OK || !r) fail("read failed");
  return reply_ptr(static_cast<redisReply*>(r));
}

void connection::settle() {
  if (owed_.empty()) return;
  auto owed = std::move(owed_);
  owed_.clear();
  for (std::size_t i = 0; i < owed.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(c_, &raw) != REDIS_OK || !raw) {
      book_->unanswered({std::make_move_iterator(owed.begin() + static_cast<std::ptrdiff_t>(i)),
                         std::make_move_iterator(owed.end())});
      fail("read failed");
    }
    reply_ptr r(static_cast<redisReply*>(raw));
    book_->answered(std::move(owed[i]), r->type == REDIS_REPLY_ERROR);
  }
}

void connection::owe(owed_release o, release_book& book) {
  book_ = &book;
  book.owe(o.lock);
  owed_.push_back(std::move(o));
}

bool connection::owes(std::string_view lock) const {
  return std::any_of(owed_.begin(), owed_.end(),
                     [&](const owed_release& o) { return o.lock == lock; });
}

steady_time connection::oldest_owed() const {
  return owed_.empty() ? steady_time::max() : owed_.front().sent;
}

std::vector<std::string> script_argv(const lua::script& s, bool full,
                                     const std::vector<std::string>& keys,
                                     const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.emplace_back(full ? "EVAL" : "EVALSHA");
  argv.emplace_back(full ? s.text : s.sha);
  argv.push_back(std::to_string(keys.size()));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

bool is_noscript(const redisReply* r) {
  return r && r->type == REDIS_REPLY_ERROR && r->str && r->len >= 8 &&
         std::memcmp(r->str, "NOSCRIPT", 8) == 0;
}

reply_ptr connection::eval(const lua::script& s, const std::vector<std::string>& keys,
                           const std::vector<std::string>& args) {
  auto r = command(script_argv(s, false, keys, args));
  if (is_noscript(r.get())) r = command(script_argv(s, true, keys, args));
  return r;
}

// ---- node ----

std::unique_ptr<connection> node::take_owing(std::string_view lock) {
  std::lock_guard g(m_);
  for (auto it = idle_.begin(); it != idle_.end(); ++it) {
    if (!(*it)->owes(lock)) continue;
    auto c = std::move(*it);
    idle_.erase(it);
    c->reused = true;
    return c;
  }
  return nullptr;
}

std::unique_ptr<connection> node::take(steady_time deadline, std::string_view lock) {
  const steady_time until = exchange_bound(deadline, s_.timeout);
  // The same client's own release of `lock`, sent without waiting, goes first.
  while (!lock.empty()) {
    const auto gen = book_.generation();
    if (!book_.owes(lock)) break;
    if (auto c = take_owing(lock)) {
      c->bound(until);
      return c;
    }
    // In use by another call, or being sent again: wait for it (within the caller's deadline).
    if (!book_.wait_change(gen, deadline)) break;
  }
  {
    std::lock_guard g(m_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      c->reused = true;
      c->bound(until);
      return c;
    }
    auto now = std::chrono::steady_clock::now();
    if (now < retry_at_)
      throw connection_error(
          "Redis " + label() + " is unreachable (next reconnect in " +
          std::to_string(std::chrono::ceil<milliseconds>(retry_at_ - now).count()) + "ms)");
  }
  try {
    auto c = std::make_unique<connection>(addr_, s_, until);
    std::lock_guard g(m_);
    backoff_ = milliseconds(0);
    return c;
  } catch (const error&) {
    std::lock_guard g(m_);
    backoff_ = reconnect_backoff(backoff_);
    retry_at_ = std::chrono::steady_clock::now() + backoff_ / 2 +
                milliseconds(jitter(static_cast<std::uint64_t>(backoff_.count() / 2) + 1));
    throw;
  }
}

void node::give(std::unique_ptr<connection> c) noexcept {
  if (!c || c->broken()) return;
  const bool owing = c->oldest_owed() != steady_time::max();
  {
    std::lock_guard g(m_);
    if (idle_.size() < std::max<std::size_t>(s_.pool, 1)) idle_.push_back(std::move(c));
  }
  if (owing) book_.changed();  // a call waiting for one of its releases may take it now
}

void node::collect(steady_time cutoff) noexcept {
  std::vector<std::unique_ptr<connection>> owing;
  {
    std::lock_guard g(m_);
    auto it = std::partition(idle_.begin(), idle_.end(),
                             [&](const auto& c) { return c->oldest_owed() > cutoff; });
    std::move(it, idle_.end(), std::back_inserter(owing));
    idle_.erase(it, idle_.end());
  }
  for (auto& c : owing) {
    try {
      c->bound(std::chrono::steady_clock::now() + s_.timeout);
      c->settle();
      give(std::move(c));
    } catch (const std::exception&) {
      // The unread replies went to the retries; the connection is dropped.
    }
  }
}

void node::drop_idle() noexcept {
  std::vector<std::unique_ptr<connection>> old;
  std::lock_guard g(m_);
  old.swap(idle_);
}

std::string node::label() const {
  return addr_.host + ":" + std::to_string(addr_.port);
}

}  // namespace sqlock::redis::detail
