// compat=shedlock on SQLite beside ShedLock's own statements (tests/support/
// shedlock_statements.hpp).
#include "shedlock_statements.hpp"

namespace sqlock::test {
using shedlock::sqlite::peer;

TEST(sqlite_shedlock, peer_and_sqlock_exclude_each_other) {
  temp_dir d;
  shedlock_both_ways("sqlite:" + (d.path / "s.db").string(), peer);
}

TEST(sqlite_shedlock, at_least_leaves_lock_until_as_shedlock_does) {
  temp_dir d;
  shedlock_at_least("sqlite:" + (d.path / "s.db").string(), peer);
}

TEST(sqlite_shedlock, compat_config_errors) {
  temp_dir d;
  shedlock_config_errors("sqlite:" + (d.path / "s.db").string());
}

}  // namespace sqlock::test
