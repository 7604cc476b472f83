// The SQLite dialect of the shared SQL engine, for every driver of a SQLite database (the
// SQLite backend, and the SOCI backend running the same statements through soci::session).
// Vendor-free: the statements call two functions each driver registers on its connections
// with its own SQLite API: sqlock_now_ms() (the kernel's boot-time clock in milliseconds,
// now_ms()) and sqlock_boot_id() (boot_id()).
#pragma once

#include <cstdint>
#include <string>

#include "sqlock/sql_engine.hpp"

namespace sqlock::sql {
/// migrations/sqlite/ and sql/sqlite/, embedded.
const bundle& bundle_sqlite();
}  // namespace sqlock::sql

namespace sqlock::sqlite {

/// The dialect for "pessimistic" or "optimistic"; config_error for any other mode.
sql::dialect make_dialect(const std::string& mode);

/// The value of sqlock_now_ms(): CLOCK_BOOTTIME in milliseconds.
std::int64_t now_ms();

/// The value of sqlock_boot_id(): /proc/sys/kernel/random/boot_id (leases do not survive a
/// reboot, whose clock starts again at 0).
const std::string& boot_id();

}  // namespace sqlock::sqlite
