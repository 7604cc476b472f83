// `sqlock list`: the held locks as a table whose columns line up (name, kind, fence, when
// acquired, held for, expires in, mode, holder) or as one JSON array; with --waiting, the
// requests waiting for them (name, position, kind, since, waited for, holder). The store gives
// the times; "held for", "expires in" and "waited for" are measured against this machine's
// clock.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "common.hpp"

namespace sqlock::cli {
namespace {

using std::chrono::milliseconds;

// `s` with control characters (C0, DEL and C1, which a terminal would act on) as '?'.
std::string printable(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    if (c < 0x20 || c == 0x7f) {
      out += '?';
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {  // U+0080..U+009F in UTF-8
      out += '?';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Columns a terminal gives `s`: one per UTF-8 character (continuation bytes do not count).
std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

// A duration as people read it: "850ms", "42s", "3m12s", "5h07m", "3d04h".
std::string span(milliseconds d) {
  char buf[32];
  auto s = d.count() / 1000;
  if (d < std::chrono::seconds(1))
    std::snprintf(buf, sizeof buf, "%lldms", static_cast<long long>(d.count()));
  else if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  else if (s < 86400)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  else
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>(s / 3600 % 24));
  return buf;
}

constexpr std::size_t n_columns = 8;
using row = std::array<std::string, n_columns>;
// Columns whose cells are right-aligned (numbers and durations).
constexpr std::array<bool, n_columns> right{false, false, true, false, true, true, false, false};

row cells(const lock_status& r, wall_time now) {
  std::string kind = to_string(r.kind);
  if (r.kind == lock_kind::permit) kind += "/" + std::to_string(r.permits);
  std::string held = "-", left = "-";
  if (auto a = parse_utc(r.acquired_at))
    held = span(std::max(milliseconds(0), std::chrono::floor<milliseconds>(now - *a)));
  if (r.expires_at.empty()) {
    left = "session";  // ends with the holder's session, not by a lease
  } else if (auto e = parse_utc(r.expires_at)) {
    auto d = std::chrono::floor<milliseconds>(*e - now);
    left = d > milliseconds(0) ? span(d) : "expired";
  }
  return {printable(r.name),
          kind,
          std::to_string(r.fence),
          printable(utc_text(r.acquired_at)),
          held,
          left,
          printable(r.mode),
          printable(r.holder)};
}

// Prints `table` with its columns lined up; `right[c]`: column c is right-aligned.
template <std::size_t N>
void print(const std::vector<std::array<std::string, N>>& table,
           const std::array<bool, N>& right_aligned) {
  std::array<std::size_t, N> width{};
  for (const auto& r : table)
    for (std::size_t c = 0; c < N; ++c) width[c] = std::max(width[c], columns(r[c]));
  for (const auto& r : table) {
    std::string line;
    for (std::size_t c = 0; c < N; ++c) {
      std::string pad(width[c] - columns(r[c]), ' ');
      if (c + 1 == N) pad.clear();  // the last column runs to the end of the line
      line += right_aligned[c] ? pad + r[c] : r[c] + pad;
      if (c + 1 < N) line += "  ";
    }
    line.erase(line.find_last_not_of(' ') + 1);
    std::cout << line << "\n";
  }
}

constexpr std::size_t n_waiting_columns = 6;
using waiting_row = std::array<std::string, n_waiting_columns>;

waiting_row waiting_cells(const waiting_request& w, wall_time now) {
  std::string kind = to_string(w.kind);
  if (w.kind == lock_kind::permit) kind += "/" + std::to_string(w.permits);
  std::string waited = "-";
  if (auto a = parse_utc(w.since))
    waited = span(std::max(milliseconds(0), std::chrono::floor<milliseconds>(now - *a)));
  return {printable(w.name),
          w.position ? std::to_string(w.position) : "-",
          kind,
          w.since.empty() ? "-" : printable(utc_text(w.since)),
          waited,
          printable(w.holder)};
}

int list_waiting(client& c, const std::string& prefix, bool json) {
  auto rows = c.waiting(prefix);
  if (json) {
    std::cout << waiting_json(rows, -1) << "\n";
    return ok;
  }
  if (rows.empty()) {
    std::cout << "no requests waiting\n";
    return ok;
  }
  auto now = std::chrono::system_clock::now();
  std::vector<waiting_row> table{{"NAME", "POSITION", "KIND", "SINCE", "WAITED FOR", "HOLDER"}};
  for (const auto& w : rows) table.push_back(waiting_cells(w, now));
  print(table, std::array<bool, n_waiting_columns>{false, true, false, false, true, false});
  return ok;
}

}  // namespace

int list_command(const std::string& url_text, const std::string& prefix, bool json, bool waiting) {
  auto c = connect(resolve_url(url_text));
  if (waiting) return list_waiting(c, prefix, json);
  auto rows = c.list(prefix);
  if (json) {
    std::cout << status_json(rows, -1) << "\n";
    return ok;
  }
  if (rows.empty()) {
    std::cout << "no locks held\n";
    return ok;
  }
  auto now = std::chrono::system_clock::now();
  std::vector<row> table{
      {"NAME", "KIND", "FENCE", "ACQUIRED", "HELD FOR", "EXPIRES IN", "MODE", "HOLDER"}};
  for (const auto& r : rows) table.push_back(cells(r, now));
  print(table, right);
  return ok;
}

}  // namespace sqlock::cli
