// The session settings of a new MySQL/MariaDB connection (src/backends/mysql/session_settings.hpp).
#include "session_settings.hpp"

#include <algorithm>
#include <charconv>
#include <tuple>

namespace sqlock::mysql {

namespace {

// Reads "<int>." / "<int>" at `s` into `out`; false unless a number is there.
bool read_part(std::string_view& s, int& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc()) return false;
  s.remove_prefix(static_cast<std::size_t>(p - s.data()));
  if (!s.empty() && s.front() == '.') s.remove_prefix(1);
  return true;
}

// One year: the largest wait_timeout every server accepts on Linux.
constexpr long long idle_limit_s = 365LL * 24 * 3600;

}  // namespace

server_flavor parse_server_version(std::string_view version) {
  server_flavor f;
  f.mariadb = version.find("MariaDB") != std::string_view::npos ||
              version.find("mariadb") != std::string_view::npos;
  // MariaDB before 11 prefixes "5.5.5-" for old replication clients.
  if (f.mariadb && version.substr(0, 6) == "5.5.5-") version.remove_prefix(6);
  std::string_view s = version;
  if (read_part(s, f.major) && read_part(s, f.minor)) read_part(s, f.patch);
  return f;
}

std::string session_settings_statement(const server_flavor& server, milliseconds io_timeout) {
  const long long lock_s = std::max<long long>(1, (io_timeout.count() + 999) / 1000);
  std::string s = "SET SESSION wait_timeout = " + std::to_string(idle_limit_s) +
                  ", interactive_timeout = " + std::to_string(idle_limit_s) +
                  ", lock_wait_timeout = " + std::to_string(lock_s) +
                  ", innodb_lock_wait_timeout = " + std::to_string(lock_s);
  const auto v = std::make_tuple(server.major, server.minor, server.patch);
  if (server.mariadb && v >= std::make_tuple(10, 1, 0))
    s += ", max_statement_time = 0";
  else if (!server.mariadb && v >= std::make_tuple(5, 7, 8))
    s += ", max_execution_time = 0";
  return s;
}

}  // namespace sqlock::mysql
