// The two SQL functions the SQLite dialect's statements call, registered on a connection by
// every SQLite driver: sqlock_now_ms() (CLOCK_BOOTTIME in milliseconds: shared by the
// machine's processes, never set back) and sqlock_boot_id() (leases do not survive a reboot,
// whose clock starts again at 0). Compiled against <sqlite3.h> only: the driver that calls
// install_functions() links libsqlite3 (the SQLite backend; SOCI through soci_sqlite3).
#include <sqlite3.h>

#include <ctime>
#include <fstream>

#include "dialect.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::sqlite {
namespace {

void now_ms_fn(sqlite3_context* ctx, int, sqlite3_value**) {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  sqlite3_result_int64(ctx, static_cast<sqlite3_int64>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000);
}

const std::string& boot_id() {
  static const std::string id = [] {
    std::ifstream f("/proc/sys/kernel/random/boot_id");
    std::string s;
    std::getline(f, s);
    return s.empty() ? std::string("unknown-boot") : s;
  }();
  return id;
}

void boot_id_fn(sqlite3_context* ctx, int, sqlite3_value**) {
  sqlite3_result_text(ctx, boot_id().c_str(), static_cast<int>(boot_id().size()), SQLITE_STATIC);
}

}  // namespace

void install_functions(sqlite3* db) {
  int rc = sqlite3_create_function(db, "sqlock_now_ms", 0, SQLITE_UTF8, nullptr, now_ms_fn, nullptr,
                                   nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "sqlock_boot_id", 0, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                 nullptr, boot_id_fn, nullptr, nullptr);
  if (rc != SQLITE_OK)
    throw backend_error(
        std::string("cannot register sqlock's SQLite functions: ") + sqlite3_errmsg(db),
        std::to_string(rc));
}

}  // namespace sqlock::sqlite
