// redact_secrets(): the one place a message's passwords become "***". It masks every URL's
// user-info password (well-formed or not: `postgresql:/u:pw@h/db`, multi-host, IPv6 hosts)
// and the value of every secret key=value pair, in a URL query (`?password=`, `&token=`) or a
// libpq-style conninfo (`password=pw`, `password = 'p w'`). It over-masks rather than leak.
#include <cctype>
#include <string>
#include <string_view>

#include "sqlock/url.hpp"

namespace sqlock {
namespace {

bool space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}
bool scheme_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '.' || c == '-';
}
bool key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
}

// Whether a parameter named `key` carries a secret (password=, sslpassword=, token=, ...).
bool secret_key(std::string_view key) {
  std::string k(key);
  for (auto& ch : k) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* word : {"password", "passwd", "pwd", "secret", "token", "auth"})
    if (k.find(word) != std::string::npos) return true;
  return false;
}

// Every "scheme:[//]user:password@" in `s`: the password becomes "***". The user info ends at
// the last '@' of the whitespace-delimited word (a malformed password may hold '/', '?', '@').
void mask_user_info(std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    bool starts =
        std::isalpha(static_cast<unsigned char>(s[i])) && (i == 0 || !scheme_char(s[i - 1]));
    if (!starts) {
      ++i;
      continue;
    }
    auto colon = i;
    while (colon < s.size() && scheme_char(s[colon])) ++colon;
    if (colon == s.size() || s[colon] != ':') {
      i = colon;
      continue;
    }
    auto info = colon + 1;
    while (info < s.size() && s[info] == '/') ++info;
    auto word_end = info;
    while (word_end < s.size() && !space(s[word_end])) ++word_end;
    auto at = std::string_view(s).substr(info, word_end - info).rfind('@');
    auto pw = s.find(':', info);
    if (at != std::string_view::npos && pw < (at += info)) {
      s.replace(pw + 1, at - pw - 1, "***");
      i = pw + 5;  // past ":***@"
    } else {
      i = colon + 1;
    }
  }
}

// The end of a quoted conninfo value opening at `q` ('...' with backslash escapes).
std::size_t quoted_end(const std::string& s, std::size_t q) {
  for (auto i = q + 1; i < s.size(); ++i) {
    if (s[i] == '\\')
      ++i;
    else if (s[i] == '\'')
      return i + 1;
  }
  return s.size();
}

// Every secret KEY=VALUE: in a query (after '?' or '&') the value ends at '&', '#' or a space;
// elsewhere (conninfo) at a space, or it is quoted.
void mask_secret_values(std::string& s) {
  for (auto eq = s.find('='); eq != std::string::npos; eq = s.find('=', eq + 1)) {
    auto key_end = eq;
    while (key_end > 0 && s[key_end - 1] == ' ') --key_end;
    auto key = key_end;
    while (key > 0 && key_char(s[key - 1])) --key;
    if (key == key_end || !secret_key(std::string_view(s).substr(key, key_end - key))) continue;
    bool query = key > 0 && (s[key - 1] == '?' || s[key - 1] == '&');
    auto v = eq + 1;
    std::size_t end = v;
    if (query) {
      while (end < s.size() && s[end] != '&' && s[end] != '#' && !space(s[end])) ++end;
    } else {
      while (v < s.size() && s[v] == ' ') ++v;
      end = v;
      if (end < s.size() && s[end] == '\'') {
        end = quoted_end(s, end);
      } else {
        while (end < s.size() && !space(s[end])) ++end;
      }
    }
    s.replace(v, end - v, "***");
    eq = v + 2;
  }
}

}  // namespace

std::string redact_secrets(std::string_view text) {
  std::string out(text);
  mask_user_info(out);
  mask_secret_values(out);
  return out;
}

}  // namespace sqlock
