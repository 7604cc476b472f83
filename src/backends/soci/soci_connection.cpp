// The shared SQL engine's driver over soci::session: statements prepared once per session with
// SOCI's own :name binding, rows read into text, native errors mapped in one place.
#include <cctype>
#include <cstdio>
#include <ctime>
#include <typeinfo>

#include <utf8.h>

#include "soci_connection.hpp"
#include "sql/socket_watchdog.hpp"

namespace sqlock::soci::detail {

using sql::watched_call;

void flavor::apply_params(const url&, options&) const {}

void flavor::check_name(std::string_view name) const {
  std::size_t max = max_name_bytes();
  if (max == 0) return;
  const std::string where = "soci+" + soci_name();
  if (name.size() > max)
    throw config_error("lock name is " + std::to_string(name.size()) + " bytes: " + where +
                       " stores at most " + std::to_string(max));
  if (name.find('\0') != std::string_view::npos || !utf8::is_valid(name.begin(), name.end()))
    throw config_error("lock name is not valid UTF-8 text (" + where +
                       " stores names as UTF-8, without NUL bytes)");
}

error_kind flavor::classify_open(const ::soci::soci_error& e, std::string& code) const {
  auto k = classify(e, code);
  return k == error_kind::backend ? error_kind::connection : k;
}

std::string quoted(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\\' || c == '\'') out.push_back('\\');
    out.push_back(c);
  }
  return out + "'";
}

std::size_t code_start(std::string_view s, bool semicolons) {
  std::size_t i = 0;
  for (;;) {
    while (i < s.size() &&
           (std::isspace(static_cast<unsigned char>(s[i])) || (semicolons && s[i] == ';')))
      ++i;
    if (s.compare(i, 2, "--") == 0) {
      auto j = s.find('\n', i);
      i = j == std::string_view::npos ? s.size() : j + 1;
    } else if (s.compare(i, 2, "/*") == 0) {
      auto j = s.find("*/", i + 2);
      i = j == std::string_view::npos ? s.size() : j + 2;
    } else {
      return i;
    }
  }
}

std::string timeout_seconds(const options& o, int min_s) {
  auto s = std::chrono::ceil<std::chrono::seconds>(o.io_timeout).count();
  return std::to_string(std::max<std::int64_t>(s, min_s));
}

void refuse_advisory(const std::string& holds, const std::string& scheme) {
  throw config_error("advisory mode holds " + holds +
                     " on a dedicated connection per hold, which the SOCI backend does not "
                     "manage: use " +
                     scheme +
                     "://...?mode=advisory, or transaction-scoped locks "
                     "(sqlock::soci::try_lock_xact)");
}

void guarded(const flavor& f, const std::string& what, const std::function<void()>& fn,
             bool opening) {
  try {
    fn();
  } catch (const sqlock::error&) {
    throw;
  } catch (const ::soci::soci_error& e) {
    std::string code;
    error_kind k = opening ? f.classify_open(e, code) : f.classify(e, code);
    std::string msg = what + ": " + e.what();
    while (!msg.empty() && std::isspace(static_cast<unsigned char>(msg.back()))) msg.pop_back();
    switch (k) {
      case error_kind::transient:
        throw sql::transient_error(msg, code);
      case error_kind::conflict:
        throw sql::conflict_error(msg, code);
      case error_kind::connection:
        throw connection_error(msg);
      case error_kind::server_full:
        throw sql::server_full(msg + " — the server had too many clients");
      case error_kind::auth:
        throw auth_error(msg);
      case error_kind::config:
        throw config_error(msg);
      case error_kind::backend:
        break;
    }
    throw backend_error(msg, code);
  } catch (const std::bad_cast&) {
    throw backend_error(what + ": unexpected column type from SOCI");
  } catch (const std::exception& e) {
    throw backend_error(what + ": " + e.what());
  } catch (...) {
    throw backend_error(what + ": unknown error");
  }
}

// ---- prepared statements ----

namespace {

// First keyword of a statement, lower-cased, after blanks and comments.
std::string first_keyword(std::string_view s) {
  std::size_t i = code_start(s, false);
  std::string k;
  while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i])))
    k.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(s[i++]))));
  return k;
}

// Whether `s` has the word `word` (lower case) outside its quoted literals and identifiers.
bool has_word(std::string_view s, std::string_view word) {
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '\'' || c == '"') {
      const auto end = s.find(c, i + 1);
      i = end == std::string_view::npos ? s.size() : end + 1;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    std::string w;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_'))
      w.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(s[i++]))));
    if (w == word) return true;
  }
  return false;
}

bool returns_rows(std::string_view s) {
  auto k = first_keyword(s);
  if (k == "insert" || k == "update" || k == "delete") return has_word(s, "returning");
  return k == "select" || k == "with" || k == "call" || k == "values" || k == "pragma" ||
         k == "show";
}

std::string iso(const std::tm& t) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", t.tm_year + 1900, t.tm_mon + 1,
                t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec);
  return buf;
}

sql::row to_text(const ::soci::row& r) {
  sql::row out;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (r.get_indicator(i) == ::soci::i_null) {
      out.emplace_back(std::nullopt);
      continue;
    }
    switch (r.get_properties(i).get_data_type()) {
      case ::soci::dt_string:
      case ::soci::dt_xml:
        out.emplace_back(r.get<std::string>(i));
        break;
      case ::soci::dt_integer:
        out.emplace_back(std::to_string(r.get<int>(i)));
        break;
      case ::soci::dt_long_long:
        out.emplace_back(std::to_string(r.get<long long>(i)));
        break;
      case ::soci::dt_unsigned_long_long:
        out.emplace_back(std::to_string(r.get<unsigned long long>(i)));
        break;
      case ::soci::dt_double: {
        double d = r.get<double>(i);
        char buf[64];
        if (d == static_cast<double>(static_cast<long long>(d)))
          std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(d));
        else
          std::snprintf(buf, sizeof buf, "%.17g", d);
        out.emplace_back(std::string(buf));
        break;
      }
      case ::soci::dt_date:
        out.emplace_back(iso(r.get<std::tm>(i)));
        break;
      default:
        throw backend_error("column " + r.get_properties(i).get_name() +
                            " has a type sqlock cannot read");
    }
  }
  return out;
}

}  // namespace

// One statement bound to one session, with the buffers its parameters are bound to.
struct cached_statement {
  std::vector<std::string> names;
  std::vector<char> is_int;
  std::vector<std::string> strs;
  std::vector<long long> ints;
  ::soci::row row;
  bool rows = false;
  const flavor& flavor_;
  std::unique_ptr<::soci::statement> st;  // last: destroyed before the buffers

  cached_statement(const flavor& f, ::soci::session& s, std::string_view text, bool once)
      : flavor_(f) {
    auto c = sql::compile(text, sql::placeholder::colon_name);
    names = c.names;
    strs.resize(names.size());
    ints.resize(names.size());
    is_int.resize(names.size());
    rows = returns_rows(c.text);
    st = std::make_unique<::soci::statement>(s);
    for (std::size_t i = 0; i < names.size(); ++i) {
      is_int[i] = sql::lookup(sql::params{}, names[i]).is_int;
      if (is_int[i])
        st->exchange(::soci::use(ints[i], names[i]));
      else
        st->exchange(::soci::use(strs[i], names[i]));
    }
    if (rows && !flavor_.raw_rows()) st->exchange(::soci::into(row));
    st->alloc();
    st->prepare(c.text,
                once ? ::soci::details::st_one_time_query : ::soci::details::st_repeatable_query);
    st->define_and_bind();
  }

  sql::rows execute(const sql::params& p) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      auto v = sql::lookup(p, names[i]);
      if (is_int[i])
        ints[i] = v.i;
      else
        strs[i].assign(v.s.data(), v.s.size());
    }
    sql::rows out;
    bool got = st->execute(true);
    if (rows && flavor_.raw_rows()) return flavor_.read_rows(*st);
    if (rows) {
      while (got) {
        out.push_back(to_text(row));
        got = st->fetch();
      }
    }
    return out;
  }
};

class statement_cache {
 public:
  std::map<std::string, std::vector<std::unique_ptr<cached_statement>>, std::less<>> ops;
};

sql::rows run_once(const flavor& f, ::soci::session& s, const std::string& text,
                   const sql::params& p) {
  sql::rows last;
  for (const auto& piece : f.split(text)) {
    cached_statement st(f, s, piece, true);
    last = st.execute(p);
    f.after_statement(s);
  }
  return last;
}

// ---- session sources ----

void session_source::reset(lease& l) {
  if (l.cache) l.cache->ops.clear();
}

namespace {

class owned final : public session_source {
 public:
  owned(const flavor& f, std::string connect, const options& o,
        std::shared_ptr<sql::connection_counter> counter)
      : flavor_(f), connect_(std::move(connect)), opts_(o), counter_(std::move(counter)) {}
  ~owned() override {
    cache_.ops.clear();  // statements before their session
    if (session_ && counter_) counter_->closed();
  }
  lease take(steady_time deadline) override {
    if (!session_) {
      session_ = open_session(flavor_, connect_, opts_, deadline);
      if (counter_) counter_->opened();
    }
    lease l;
    l.session = session_.get();
    l.cache = &cache_;
    return l;
  }

 private:
  const flavor& flavor_;
  std::string connect_;
  options opts_;
  std::shared_ptr<sql::connection_counter> counter_;  // null: not counted
  std::unique_ptr<::soci::session> session_;
  statement_cache cache_;
};

class borrowed final : public session_source {
 public:
  explicit borrowed(::soci::session& s) : session_(s) {}
  lease take(steady_time) override {
    auto g = std::make_shared<std::unique_lock<std::mutex>>(mutex_);
    lease l;
    l.session = &session_;
    l.cache = &cache_;
    l.borrowed = true;
    l.done = [g] { g->unlock(); };
    return l;
  }

 private:
  ::soci::session& session_;
  std::mutex mutex_;
  statement_cache cache_;
};

class pooled final : public session_source {
 public:
  pooled(::soci::connection_pool& p, const flavor& f, const options& o)
      : pool_(p), flavor_(f), opts_(o) {}
  lease take(steady_time) override {
    std::size_t pos = pool_.lease();
    lease l;
    l.session = &pool_.at(pos);
    l.borrowed = true;
    l.done = [this, pos] { pool_.give_back(pos); };
    bool fresh = false;
    {
      std::lock_guard g(mutex_);
      fresh = !caches_.count(pos);
      l.cache = &caches_[pos];
    }
    if (fresh) {
      try {
        guarded(flavor_, "cannot prepare a pooled SOCI session",
                [&] { flavor_.prepare_session(*l.session, opts_, false); });
      } catch (...) {
        std::lock_guard g(mutex_);
        caches_.erase(pos);
        throw;
      }
    }
    return l;
  }

 private:
  ::soci::connection_pool& pool_;
  const flavor& flavor_;
  options opts_;
  std::mutex mutex_;
  std::map<std::size_t, statement_cache> caches_;  // node-based: stable addresses
};

}  // namespace

std::unique_ptr<session_source> owned_source(const flavor& f, const std::string& connect,
                                             const options& o,
                                             std::shared_ptr<sql::connection_counter> counter) {
  return std::make_unique<owned>(f, connect, o, std::move(counter));
}

std::shared_ptr<session_source> borrowed_source(::soci::session& s) {
  return std::make_shared<borrowed>(s);
}

std::shared_ptr<session_source> pool_source(::soci::connection_pool& p, const flavor& f,
                                            const options& o) {
  return std::make_shared<pooled>(p, f, o);
}

// ---- the driver ----

namespace {
// A parameterless statement of the session's cache (BEGIN IMMEDIATE, COMMIT), prepared once.
cached_statement& prepared(session_source::lease& l, const flavor& f, const std::string& key,
                           const std::string& text) {
  auto& list = l.cache->ops[key];
  if (list.empty()) list.push_back(std::make_unique<cached_statement>(f, *l.session, text, false));
  return *list.front();
}
}  // namespace

soci_connection::soci_connection(const flavor& f, std::shared_ptr<session_source> src,
                                 const options& o)
    : flavor_(f), src_(std::move(src)), opts_(o) {}

void soci_connection::on_session(const std::string& what, steady_time deadline,
                                 const std::function<void(session_source::lease&)>& fn) {
  auto l = src_->take(deadline);
  if (std::chrono::steady_clock::now() >= deadline)
    throw connection_error(what + ": the deadline passed before the call started");
  int fd = -1;
  if (!l.borrowed) {  // only a session sqlock opened may be broken at the deadline
    flavor_.limit_wait(*l.session, deadline, opts_);
    fd = flavor_.socket_of(*l.session);
  }
  watched_call watch(fd, deadline);
  auto late = [&] {
    return connection_error(what + ": no answer by the deadline (the session was closed)");
  };
  try {
    guarded(flavor_, what, [&] { fn(l); });
  } catch (...) {
    src_->reset(l);
    if (watch.finish()) throw late();
    throw;
  }
  if (watch.finish()) throw late();  // answered as the socket was shut down: state unknown
}

sql::rows soci_connection::run(const sql::operation& op, const sql::params& p,
                               steady_time deadline) {
  sql::rows out;
  on_session("sqlock " + op.key + " through SOCI " + flavor_.soci_name(), deadline,
             [&](session_source::lease& l) {
               auto& s = *l.session;
               if (l.borrowed && flavor_.in_transaction(s))
                 throw usage_error(
                     "a transaction is open on the SOCI session given to sqlock: lease-based "
                     "lock operations run in their own transactions; inside yours use "
                     "sqlock::soci::try_lock_xact()");
               auto& list = l.cache->ops[op.key];
               if (list.empty()) {
                 for (const auto& text : op.statements)
                   for (const auto& piece : flavor_.split(text))
                     list.push_back(std::make_unique<cached_statement>(flavor_, s, piece, false));
               }
               const bool tx = list.size() > 1;
               if (tx) prepared(l, flavor_, "(sqlock begin)", flavor_.begin_statement()).execute(p);
               try {
                 for (auto& st : list) {
                   out = st->execute(p);
                   flavor_.after_statement(s);
                 }
                 if (tx) prepared(l, flavor_, "(sqlock commit)", "COMMIT").execute(p);
               } catch (...) {
                 if (tx) {
                   try {
                     s.once << "ROLLBACK";
                   } catch (...) {
                   }
                 }
                 throw;
               }
             });
  return out;
}

void soci_connection::execute_script(std::string_view script) {
  // Migrations are explicit administration: bounded only by the clients' own read timeouts.
  on_session("SQL script through SOCI " + flavor_.soci_name(), steady_time::max(),
             [&](session_source::lease& l) { flavor_.execute_script(*l.session, script); });
}

sql::rows soci_connection::query(std::string_view text, steady_time deadline) {
  sql::rows out;
  on_session("query through SOCI " + flavor_.soci_name(),
             exchange_bound(deadline, opts_.io_timeout), [&](session_source::lease& l) {
               out = run_once(flavor_, *l.session, std::string(text), sql::params{});
             });
  return out;
}

}  // namespace sqlock::soci::detail
