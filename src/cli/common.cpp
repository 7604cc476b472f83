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

int guarded(const std::function<int()>& fn) {
  try {
    return fn();
  } catch (const read_only_error& e) {
    std::cerr << "sqlock: read-only server: " << e.what() << "\n";
    return read_only;
  } catch (const auth_error& e) {
    std::cerr << "sqlock: access refused: " << e.what() << "\n";
    return noperm;
  } catch (const config_error& e) {
    std::cerr << "sqlock: " << e.what() << "\n";
    return usage;
  } catch (const connection_error& e) {
    std::cerr << "sqlock: backend unreachable: " << e.what() << "\n";
    return unavailable;
  } catch (const unsupported& e) {
    std::cerr << "sqlock: unsupported: " << e.what() << "\n";
    return usage;
  } catch (const backend_error& e) {
    std::cerr << "sqlock: backend error" << (e.code().empty() ? "" : " [" + e.code() + "]") << ": "
              << e.what() << "\n";
    return unavailable;
  } catch (const std::exception& e) {
    std::cerr << "sqlock: " << e.what() << "\n";
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

}  // namespace sqlock::cli
