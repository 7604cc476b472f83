#include "sqlock/url.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "sqlock/errors.hpp"

namespace sqlock {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw config_error("bad URL '" + redact_url(text) + "': " + why);
}

// Percent-decodes one part of a URL; a bad escape names the part, never its text (it may be
// the password).
std::string decode_part(std::string_view part, std::string_view whole, const char* what) {
  try {
    return percent_decode(part);
  } catch (const config_error&) {
    bad(whole, std::string("bad percent-escape in the ") + what);
  }
}

url_host parse_host(std::string_view text, std::string_view whole) {
  url_host h;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) bad(whole, "unterminated '[' in host");
    h.host = std::string(text.substr(1, close - 1));
    auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') bad(whole, "junk after ']' in host");
      port = rest.substr(1);
    }
  } else {
    auto colon = text.rfind(':');
    if (colon != std::string_view::npos) {
      port = text.substr(colon + 1);
      text = text.substr(0, colon);
    }
    h.host = decode_part(text, whole, "host");
  }
  if (!port.empty()) {
    int p = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || ptr != port.data() + port.size() || p <= 0 || p > 65535)
      bad(whole, "port '" + std::string(port) + "' is not a number from 1 to 65535");
    h.port = p;
  }
  return h;
}

}  // namespace

std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size() || hex_value(s[i + 1]) < 0 || hex_value(s[i + 2]) < 0)
        throw config_error("bad percent-escape at byte " + std::to_string(i + 1) +
                           " (expected %XX with two hex digits)");
      out.push_back(static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string percent_encode(std::string_view s) {
  return percent_encode(s, [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
  });
}

std::string percent_encode(std::string_view s, bool (*plain)(unsigned char)) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (plain(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

url url::parse(std::string_view text) {
  url u;
  u.original = std::string(text);
  auto colon = text.find(':');
  if (text.empty()) bad(text, "empty");
  if (colon == std::string_view::npos || colon == 0) bad(text, "no scheme (expected scheme:...)");
  for (std::size_t i = 0; i < colon; ++i) {
    char c = text[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.'))
      bad(text, "invalid character in scheme");
    u.scheme.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  std::string_view rest = text.substr(colon + 1);
  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (auto f = query.find('#'); f != std::string_view::npos) query = query.substr(0, f);
  if (rest.substr(0, 2) == "//") {
    u.has_authority = true;
    rest.remove_prefix(2);
    auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
    if (auto at = authority.rfind('@'); at != std::string_view::npos) {
      std::string_view userinfo = authority.substr(0, at);
      authority = authority.substr(at + 1);
      if (auto c = userinfo.find(':'); c != std::string_view::npos) {
        u.user = decode_part(userinfo.substr(0, c), text, "user name");
        u.password = decode_part(userinfo.substr(c + 1), text, "password");
      } else {
        u.user = decode_part(userinfo, text, "user name");
      }
    }
    while (!authority.empty()) {
      auto comma = authority.find(',');
      std::string_view one = authority.substr(0, comma);
      if (one.empty()) bad(text, "empty host in host list");
      u.hosts.push_back(parse_host(one, text));
      if (comma == std::string_view::npos) break;
      authority.remove_prefix(comma + 1);
      if (authority.empty()) bad(text, "trailing ',' in host list");
    }
  }
  u.path = decode_part(rest, text, "path");
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    if (!kv.empty()) {
      auto eq = kv.find('=');
      std::string key = decode_part(kv.substr(0, eq), text, "query");
      if (key.empty()) bad(text, "empty query parameter name");
      u.query[key] = eq == std::string_view::npos ? std::string{}
                                                  : decode_part(kv.substr(eq + 1), text, "query");
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return u;
}

std::string url::param(const std::string& key, const std::string& fallback) const {
  auto it = query.find(key);
  return it == query.end() ? fallback : it->second;
}

std::optional<std::string> url::take(const std::string& key) {
  auto it = query.find(key);
  if (it == query.end()) return std::nullopt;
  std::string v = it->second;
  query.erase(it);
  return v;
}

std::string url::redacted() const {
  return redact_url(original);
}

std::string redact_url(std::string_view text) {
  return redact_secrets(text);
}

void url::check_params(const std::vector<std::string>& allowed) const {
  for (const auto& [k, v] : query) {
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw config_error("unknown parameter '" + k + "' in URL '" + redacted() +
                         "' (known: " + (list.empty() ? "none" : list) + ")");
    }
  }
}

namespace {
[[noreturn]] void bad_param(const url& u, const std::string& key, const std::string& value,
                            const std::string& want) {
  throw config_error("URL parameter " + key + " must be " + want + " (got '" + value + "') in '" +
                     u.redacted() + "'");
}
}  // namespace

std::optional<std::chrono::milliseconds> url::duration_param(const std::string& key,
                                                             std::chrono::milliseconds min,
                                                             std::chrono::milliseconds max) const {
  auto it = query.find(key);
  if (it == query.end()) return std::nullopt;
  auto range = [&] {
    std::string r = "a duration";
    if (min.count() > 0) r += " of at least " + std::to_string(min.count()) + "ms";
    if (max != std::chrono::milliseconds::max())
      r += std::string(min.count() > 0 ? " and" : "") + " of at most " +
           std::to_string(max.count()) + "ms";
    return r + " (250ms, 30s, 5m)";
  };
  std::chrono::milliseconds d{};
  try {
    d = parse_duration(it->second);
  } catch (const config_error&) {
    bad_param(*this, key, it->second, range());
  }
  if (d < min || d > max) bad_param(*this, key, it->second, range());
  return d;
}

std::optional<std::int64_t> url::count_param(const std::string& key, std::int64_t min,
                                             std::int64_t max) const {
  auto it = query.find(key);
  if (it == query.end()) return std::nullopt;
  const auto& v = it->second;
  std::int64_t n = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || v.front() == '-' || v.front() == '+' || ec != std::errc() ||
      ptr != v.data() + v.size() || n < min || n > max)
    bad_param(*this, key, v,
              "a whole number from " + std::to_string(min) + " to " + std::to_string(max));
  return n;
}

std::optional<bool> url::flag_param(const std::string& key) const {
  auto it = query.find(key);
  if (it == query.end()) return std::nullopt;
  std::string v = it->second;
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "on" || v == "true" || v == "yes" || v == "1") return true;
  if (v == "off" || v == "false" || v == "no" || v == "0") return false;
  bad_param(*this, key, it->second, "on or off (true/false, yes/no, 1/0)");
}

std::optional<std::string> url::choice_param(const std::string& key,
                                             const std::vector<std::string>& choices) const {
  auto it = query.find(key);
  if (it == query.end()) return std::nullopt;
  if (std::find(choices.begin(), choices.end(), it->second) != choices.end()) return it->second;
  std::string list;
  for (std::size_t i = 0; i < choices.size(); ++i)
    list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  bad_param(*this, key, it->second, list);
}

std::chrono::milliseconds parse_duration(std::string_view text) {
  std::string_view t = text;
  auto fail = [&](const std::string& why) -> std::chrono::milliseconds {
    throw config_error("bad duration '" + std::string(text) + "': " + why +
                       " (examples: 250ms, 30s, 5m, 1h)");
  };
  if (t.empty()) return fail("empty");
  if (std::isspace(static_cast<unsigned char>(t.front())) ||
      std::isspace(static_cast<unsigned char>(t.back())))
    return fail("white space around the value");
  if (t.front() == '-') return fail("negative");
  std::size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
  std::string number(t.substr(0, i));
  std::string_view unit = t.substr(i);
  if (number.empty() || std::count(number.begin(), number.end(), '.') > 1) return fail("no number");
  double v = 0;
  try {
    std::size_t used = 0;
    v = std::stod(number, &used);
    if (used != number.size()) return fail("bad number");
  } catch (const std::exception&) {
    return fail("bad number");
  }
  double scale = 0;
  if (unit == "ms")
    scale = 1;
  else if (unit == "s" || unit.empty())
    scale = 1000;
  else if (unit == "m" || unit == "min")
    scale = 60000;
  else if (unit == "h")
    scale = 3600000;
  else
    return fail("unknown unit '" + std::string(unit) + "'");
  double ms = v * scale;
  if (!std::isfinite(ms) || ms > 9.0e15) return fail("too large");
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(ms)));
}

std::string format_utc_ms(std::int64_t epoch_ms) {
  std::time_t secs = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(epoch_ms % 1000));
  return buf;
}

}  // namespace sqlock
