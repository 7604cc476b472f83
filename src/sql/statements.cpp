// The statement side of the engine (params.hpp, statements.hpp): named parameters looked up and
// compiled to a driver's native placeholders (:name -> $1 or ?), skipping literals, comments and
// casts.
#include <cctype>
#include <map>

#include "params.hpp"
#include "sqlock/errors.hpp"
#include "statements.hpp"

namespace sqlock::sql {

value lookup(const params& p, std::string_view key) {
  if (key == "name") return {false, 0, p.name};
  if (key == "owner") return {false, 0, p.owner};
  if (key == "lease_ms") return {true, p.lease_ms, {}};
  if (key == "holder") return {false, 0, p.holder};
  if (key == "actor") return {false, 0, p.actor};
  if (key == "fence") return {true, p.fence, {}};
  if (key == "prefix") return {false, 0, p.prefix};
  if (key == "limit") return {true, p.limit, {}};
  if (key == "mode") return {false, 0, p.mode};
  if (key == "kind") return {false, 0, p.kind};
  if (key == "permits") return {true, p.permits, {}};
  if (key == "mark_ms") return {true, p.mark_ms, {}};
  if (key == "holds") return {false, 0, p.holds};
  if (key == "waits") return {false, 0, p.waits};
  if (key == "marks") return {false, 0, p.marks};
  if (key == "key") {
    if (!p.key) throw config_error("internal error: a statement uses :key, and no key was set");
    return {true, *p.key, {}};
  }
  throw config_error("unknown SQL parameter ':" + std::string(key) + "'");
}

compiled compile(std::string_view s, placeholder style) {
  compiled out;
  std::map<std::string, std::size_t, std::less<>> index;
  auto is_start = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  auto is_part = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '\'' || c == '"' || c == '`') {  // literal or quoted identifier: copy verbatim
      std::size_t j = quoted_end(s, i, "'");
      out.text.append(s.substr(i, j - i));
      i = j;
    } else if (c == '-' && i + 1 < s.size() && s[i + 1] == '-') {
      auto j = s.find('\n', i);
      j = j == std::string_view::npos ? s.size() : j;
      out.text.append(s.substr(i, j - i));
      i = j;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      auto j = s.find("*/", i + 2);
      j = j == std::string_view::npos ? s.size() : j + 2;
      out.text.append(s.substr(i, j - i));
      i = j;
    } else if (c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      out.text.append("::");
      i += 2;
    } else if (c == ':' && i + 1 < s.size() && is_start(s[i + 1])) {
      std::size_t j = i + 1;
      while (j < s.size() && is_part(s[j])) ++j;
      std::string name(s.substr(i + 1, j - i - 1));
      switch (style) {
        case placeholder::question:
          out.names.push_back(name);
          out.text.push_back('?');
          break;
        case placeholder::dollar: {
          auto it = index.find(name);
          if (it == index.end()) {
            out.names.push_back(name);
            it = index.emplace(name, out.names.size()).first;
          }
          out.text.push_back('$');
          out.text.append(std::to_string(it->second));
          break;
        }
        case placeholder::colon_name:
          if (!index.count(name)) {
            out.names.push_back(name);
            index.emplace(name, out.names.size());
          }
          out.text.append(":" + name);
          break;
      }
      i = j;
    } else {
      out.text.push_back(c);
      ++i;
    }
  }
  return out;
}

std::size_t quoted_end(std::string_view s, std::size_t open, std::string_view backslash_quotes) {
  const char q = s[open];
  const bool backslash = backslash_quotes.find(q) != std::string_view::npos;
  std::size_t j = open + 1;
  while (j < s.size()) {
    if (s[j] == '\\' && backslash && j + 1 < s.size()) {
      j += 2;
      continue;
    }
    if (s[j] == q) {
      if (j + 1 < s.size() && s[j + 1] == q) {
        j += 2;
        continue;
      }
      break;
    }
    ++j;
  }
  return std::min(j + 1, s.size());
}

}  // namespace sqlock::sql
