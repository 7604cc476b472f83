#include "common.hpp"

#include <cctype>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sqlock/sqlite/sqlite.hpp"
#include "sqlock/url.hpp"

namespace sqlock::cli {

std::string resolve_url(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("SQLOCK_URL"); env && *env) return env;
  return "sqlite:";  // the backend resolves the default state path and creates its directory
}

std::string with_mode(const std::string& text, const std::string& mode) {
  if (mode.empty()) return text;
  url u = url::parse(text);  // validates
  (void)u;
  std::string base = text, query;
  if (auto q = text.find('?'); q != std::string::npos) {
    base = text.substr(0, q);
    query = text.substr(q + 1);
  }
  std::string out;
  std::size_t pos = 0;
  while (pos <= query.size() && !query.empty()) {
    auto amp = query.find('&', pos);
    std::string kv = query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    if (!kv.empty() && kv.rfind("mode=", 0) != 0 && kv != "mode")
      out += (out.empty() ? "" : "&") + kv;
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
  if (!out.empty()) out += '&';
  out += "mode=";
  out += percent_encode(mode);
  return base + "?" + out;
}

std::string shown(std::string_view text) {
  return redact_secrets(text);
}

int guarded(const std::function<int()>& fn) {
  try {
    return fn();
  } catch (const read_only_error& e) {
    std::cerr << "sqlock: read-only server: " << shown(e.what()) << "\n";
    return read_only;
  } catch (const auth_error& e) {
    std::cerr << "sqlock: access refused: " << shown(e.what()) << "\n";
    return noperm;
  } catch (const schema_error& e) {
    std::cerr << "sqlock: " << shown(e.what()) << "\n";
    return no_schema;
  } catch (const config_error& e) {
    std::cerr << "sqlock: " << shown(e.what()) << "\n";
    return usage;
  } catch (const connection_error& e) {
    std::cerr << "sqlock: backend unreachable: " << shown(e.what()) << "\n";
    return unavailable;
  } catch (const unsupported& e) {
    std::cerr << "sqlock: unsupported: " << shown(e.what()) << "\n";
    return usage;
  } catch (const backend_error& e) {
    std::cerr << "sqlock: backend error" << (e.code().empty() ? "" : " [" + e.code() + "]") << ": "
              << shown(e.what()) << "\n";
    return unavailable;
  } catch (const std::exception& e) {
    std::cerr << "sqlock: " << shown(e.what()) << "\n";
    return software;
  }
}

std::optional<wall_time> parse_utc(const std::string& iso) {
  std::tm tm{};
  std::istringstream in(iso);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return std::nullopt;
  long ms = 0;
  if (in.peek() == '.') {
    in.get();
    int digits = 0;
    while (std::isdigit(in.peek())) {
      int d = in.get() - '0';
      if (digits++ < 3) ms = ms * 10 + d;
    }
    while (digits++ < 3) ms *= 10;
  }
  if (in.get() != 'Z') return std::nullopt;
  auto secs = ::timegm(&tm);
  return wall_time(std::chrono::seconds(secs)) + std::chrono::milliseconds(ms);
}

std::string utc_text(const std::string& iso) {
  auto t = parse_utc(iso);
  if (!t) return iso.empty() ? "-" : iso;
  std::time_t secs = std::chrono::system_clock::to_time_t(*t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string duration_text(milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  return std::to_string(d.count()) + "ms";
}

std::string holders_of(const client& c, const std::string& name) {
  try {
    std::vector<lock_status> rows;
    for (auto& r : c.list(name))
      if (r.name == name) rows.push_back(std::move(r));
    if (rows.empty()) return {};
    const auto& first = rows.front();
    std::string who = first.holder.empty() ? "an unnamed holder" : first.holder;
    if (!first.acquired_at.empty()) who += " since " + utc_text(first.acquired_at);
    if (rows.size() > 1) who += ", and " + std::to_string(rows.size() - 1) + " more";
    return who;
  } catch (const std::exception&) {
    return {};  // the message stays without the holder
  }
}

std::string status_json(const std::vector<lock_status>& rows, int indent) {
  auto arr = nlohmann::json::array();
  for (const auto& s : rows) {
    arr.push_back({{"name", s.name},
                   {"owner", s.owner},
                   {"fence", s.fence},
                   {"acquired_at", s.acquired_at},
                   {"expires_at", s.expires_at},
                   {"mode", s.mode},
                   {"holder", s.holder},
                   {"kind", to_string(s.kind)},
                   {"permits", s.permits}});
  }
  // Names are stored verbatim and may hold invalid UTF-8: replace rather than fail.
  return arr.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string waiting_json(const std::vector<waiting_request>& rows, int indent) {
  auto arr = nlohmann::json::array();
  for (const auto& w : rows) {
    arr.push_back({{"name", w.name},
                   {"owner", w.owner},
                   {"holder", w.holder},
                   {"kind", to_string(w.kind)},
                   {"permits", w.permits},
                   {"since", w.since},
                   {"position", w.position ? nlohmann::json(w.position) : nullptr}});
  }
  return arr.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sqlock::cli
