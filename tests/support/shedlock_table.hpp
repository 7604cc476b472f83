// The conformance suite's compat=shedlock instances: ShedLock's default table `shedlock`,
// created once per server through sqlock's migrate() (CREATE TABLE IF NOT EXISTS; two test
// processes creating it at once may collide on the catalog, so a failed create is tried again).
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"
#include "test_env.hpp"

namespace sqlock::test {

/// `url` + compat=shedlock, with ShedLock's table created when missing.
inline std::string shedlock_layout(const std::string& url) {
  register_builtin_backends();
  const auto u = url + (url.find('?') == std::string::npos ? "?" : "&") + "compat=shedlock";
  for (int attempt = 0;; ++attempt) {
    try {
      schema_of(*make_backend(u)).migrate();
      return u;
    } catch (const backend_error&) {
      if (attempt == 2) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

}  // namespace sqlock::test
