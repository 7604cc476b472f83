// Connection strings: parse_url() (sqlock's options out, libpq's through), redaction and
// scrubbing of passwords, and a libpq parse check that connects to nothing.
#include "conninfo.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <cctype>

#include "compat.hpp"
#include "dialect.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/postgres/postgres.hpp"
#include "sqlock/url.hpp"

namespace sqlock::postgres {

namespace {

bool is_uri(std::string_view s) {
  return s.rfind("postgresql://", 0) == 0 || s.rfind("postgres://", 0) == 0;
}

// One `keyword = value` of a key=value conninfo string: where the value's text is, and its
// value after libpq's quoting rules ('...' with backslash escapes, or bare up to white space).
struct kv_value {
  std::string key;
  std::size_t begin = 0, end = 0;  // the value as written: [begin, end)
  std::string decoded;
};

std::vector<kv_value> split_keywords(std::string_view s) {
  std::vector<kv_value> out;
  auto space = [&](std::size_t i) { return std::isspace(static_cast<unsigned char>(s[i])); };
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && space(i)) ++i;
    std::size_t k = i;
    while (i < s.size() && s[i] != '=' && !space(i)) ++i;
    kv_value v;
    v.key = std::string(s.substr(k, i - k));
    while (i < s.size() && space(i)) ++i;
    if (i >= s.size() || s[i] != '=') break;  // malformed: stop; libpq reports it
    ++i;
    while (i < s.size() && space(i)) ++i;
    v.begin = i;
    bool quoted = i < s.size() && s[i] == '\'';
    if (quoted) ++i;
    while (i < s.size()) {
      if (s[i] == '\\' && i + 1 < s.size()) {
        v.decoded.push_back(s[i + 1]);
        i += 2;
      } else if (quoted ? s[i] == '\'' : static_cast<bool>(space(i))) {
        break;
      } else {
        v.decoded.push_back(s[i++]);
      }
    }
    if (quoted && i < s.size()) ++i;  // the closing quote
    v.end = i;
    out.push_back(std::move(v));
  }
  return out;
}

// [begin, end) of the values of `password=` in a URI's query.
std::vector<std::pair<std::size_t, std::size_t>> uri_query_passwords(std::string_view s) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  auto q = s.find('?');
  if (q == std::string_view::npos) return out;
  for (std::size_t i = q + 1; i < s.size();) {
    auto amp = s.find_first_of("&#", i);
    if (amp == std::string_view::npos) amp = s.size();
    if (s.substr(i, 9) == "password=") out.emplace_back(i + 9, amp);
    if (amp < s.size() && s[amp] == '#') break;
    i = amp + 1;
  }
  return out;
}

}  // namespace

std::string redact_conninfo(std::string_view conninfo) {
  return redact_secrets(conninfo);
}

scrubber::scrubber(std::string_view conninfo) {
  auto add = [&](std::string s) {
    if (!s.empty()) secrets_.push_back(std::move(s));
  };
  if (is_uri(conninfo)) {
    // The user-info password as written, then decoded where it decodes.
    auto redacted = redact_url(conninfo);
    auto start = conninfo.find("//") + 2;
    auto colon = conninfo.find(':', start);
    auto stars = redacted.find("***", start);
    if (stars != std::string::npos && colon != std::string_view::npos) {
      auto len = conninfo.size() - redacted.size() + 3;
      add(std::string(conninfo.substr(colon + 1, len)));
    }
    for (auto [b, e] : uri_query_passwords(conninfo)) add(std::string(conninfo.substr(b, e - b)));
    try {
      auto u = url::parse(conninfo);
      if (u.password) add(*u.password);
      if (auto it = u.query.find("password"); it != u.query.end()) add(it->second);
    } catch (const error&) {
      // Undecodable: the forms as written are all a message can quote.
    }
  } else {
    for (const auto& kv : split_keywords(conninfo)) {
      if (kv.key != "password") continue;
      add(std::string(conninfo.substr(kv.begin, kv.end - kv.begin)));
      add(kv.decoded);
    }
  }
  // Longest first, so that a password containing another is replaced whole.
  std::sort(secrets_.begin(), secrets_.end(),
            [](const auto& a, const auto& b) { return a.size() > b.size(); });
}

std::string scrubber::operator()(std::string message) const {
  for (const auto& s : secrets_) {
    for (auto at = message.find(s); at != std::string::npos; at = message.find(s, at + 3))
      message.replace(at, s.size(), "***");
  }
  return message;
}

void check_conninfo(const std::string& conninfo) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (!opts) {
    std::string msg = err ? err : "out of memory";
    if (err) PQfreemem(err);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    throw config_error(scrubber(conninfo)("bad PostgreSQL connection string '" +
                                          redact_conninfo(conninfo) + "': " + msg));
  }
  PQconninfoFree(opts);
}

namespace {

// sqlock's own URL parameters; everything else is libpq's.
bool is_sqlock_param(const std::string& key) {
  for (const char* k :
       {"mode",          "schema",   "execute_role",   "migrate",       "max_connections",
        "pool",          "sessions", "waiters",        "listen",        "timeout",
        "record_after",  "pooler",   "prepare",        "listen_host",   "listen_port",
        "listen_dbname", "compat",   "shedlock_table", "allow_hashing", "release"})
    if (key == k) return true;
  return false;
}

// Bounds of the URL's counts: a pool or session count beyond this is a typo, not a plan.
constexpr std::int64_t max_connections = 1000;
// Bounds of `timeout=`: below 10 ms no exchange with a server completes; above an hour a
// frozen server would hold a caller longer than any lease makes sense.
constexpr milliseconds min_timeout{10};
constexpr milliseconds max_timeout{3600 * 1000};

void read_options(const url& u, options& o) {
  std::vector<std::string> mode_names(std::begin(modes), std::end(modes));
  if (auto v = u.choice_param("mode", mode_names)) o.mode = *v;
  if (u.query.count("schema")) o.schema = u.param("schema");
  if (u.query.count("execute_role")) o.execute_role = u.param("execute_role");
  if (auto v = u.choice_param("migrate", {"auto", "off"})) o.auto_migrate = *v == "auto";
  if (auto v = u.count_param("max_connections", 1, max_connections))
    o.max_connections = static_cast<std::size_t>(*v);
  if (auto v = u.count_param("pool", 1, max_connections)) o.pool = static_cast<std::size_t>(*v);
  if (auto v = u.count_param("sessions", 1, max_connections))
    o.sessions = static_cast<std::size_t>(*v);
  if (auto v = u.count_param("waiters", 0, max_connections))
    o.waiters = static_cast<std::size_t>(*v);
  if (auto v = u.flag_param("listen")) o.listen = *v;
  if (auto v = u.duration_param("timeout", min_timeout, max_timeout)) o.timeout = *v;
  if (auto v = u.duration_param("record_after", milliseconds(0), max_timeout)) o.record_after = *v;
  if (auto v = u.choice_param("pooler", {"transaction", "statement", "session", "none"}))
    o.pooler = *v;
  if (auto v = u.flag_param("prepare")) o.prepare = *v;
  if (u.query.count("listen_host")) o.listen_host = u.param("listen_host");
  if (auto v = u.count_param("listen_port", 1, 65535)) o.listen_port = std::to_string(*v);
  if (u.query.count("listen_dbname")) o.listen_dbname = u.param("listen_dbname");
  if (auto v = u.choice_param("compat", {std::begin(compat_layouts), std::end(compat_layouts)}))
    o.compat = *v;
  if (u.query.count("shedlock_table")) o.shedlock_table = u.param("shedlock_table");
  if (auto v = u.flag_param("allow_hashing")) o.allow_hashing = *v;
  if (auto v = u.choice_param("release", {"async", "wait"})) o.async_release = *v == "async";
  if (u.query.count("listen_host") && o.listen_host.empty())
    throw config_error("PostgreSQL URL parameter listen_host is empty");
  if (u.query.count("listen_dbname") && o.listen_dbname.empty())
    throw config_error("PostgreSQL URL parameter listen_dbname is empty");
}

}  // namespace

std::string parse_url(const std::string& url_text, options& o) {
  const scrubber scrub(url_text);
  try {
    url u = url::parse(url_text);  // syntax check; config_error on malformed input
    if (u.scheme != "postgresql" && u.scheme != "postgres")
      throw config_error("not a PostgreSQL URL: '" + redact_conninfo(url_text) + "'");
    read_options(u, o);
  } catch (const auth_error&) {
    throw;
  } catch (const config_error& e) {
    throw config_error(scrub(e.what()));  // the core's messages may quote a query password
  }
  // libpq's URI is the text without sqlock's parameters; the rest is passed through verbatim.
  std::string base = url_text, query;
  if (auto q = url_text.find('?'); q != std::string::npos) {
    base = url_text.substr(0, q);
    query = url_text.substr(q + 1);
    if (auto f = query.find('#'); f != std::string::npos) query.resize(f);
  }
  std::string kept;
  bool has_encoding = false;
  for (std::size_t start = 0; start < query.size();) {
    auto amp = query.find('&', start);
    if (amp == std::string::npos) amp = query.size();
    std::string kv = query.substr(start, amp - start);
    start = amp + 1;
    if (kv.empty()) continue;
    std::string key = percent_decode(kv.substr(0, kv.find('=')));
    if (is_sqlock_param(key)) continue;
    if (key == "client_encoding") has_encoding = true;
    kept += (kept.empty() ? "" : "&") + kv;
  }
  if (!has_encoding) kept += std::string(kept.empty() ? "" : "&") + "client_encoding=UTF8";
  kept += "&fallback_application_name=sqlock";
  std::string conninfo = base + "?" + kept;
  check_conninfo(conninfo);
  return conninfo;
}

}  // namespace sqlock::postgres
