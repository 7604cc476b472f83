// compat=shedlock on PostgreSQL beside ShedLock's own statements (tests/support/
// shedlock_statements.hpp).
#include "pg_env.hpp"
#include "shedlock_statements.hpp"

namespace sqlock::test {
using shedlock::postgres::peer;

TEST_F(postgres, shedlock_peer_and_sqlock_exclude_each_other) {
  shedlock_both_ways(owner_, peer);
}

TEST_F(postgres, shedlock_at_least_leaves_lock_until_as_shedlock_does) {
  shedlock_at_least(owner_, peer);
}

TEST_F(postgres, shedlock_compat_config_errors) {
  shedlock_config_errors(owner_);
}

}  // namespace sqlock::test
