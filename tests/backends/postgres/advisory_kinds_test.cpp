// Shared locks and semaphore permits in advisory mode beyond the conformance suite: `sqlock
// migrate` to version 6 with an exclusive hold of the version-5 routines live, and what the
// EXECUTE-only role and a DBA see of the new holds (list with kind and permits, fence_check,
// another kind on a name in use, force_release ending every kind), and a writer waiting inside
// the server keeping new readers out.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "backends/postgres/dialect.hpp"
#include "pg_env.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/postgres/xact_lock.hpp"
#include "sqlock/semaphore.hpp"
#include "sqlock/shared_mutex.hpp"

namespace sqlock::test {
namespace {

TEST_F(postgres, migrate_to_v6_keeps_a_live_advisory_hold_of_the_v5_routines) {
  std::string schema = "sqlock_v5_" + random_token().substr(0, 8);
  schema_guard guard(owner_, schema);
  const auto& b = sqlock::postgres::bundle();
  // Version 5 of the schema, with the routines an exclusive advisory hold of version 5 used
  // (what a try runs in them is unchanged since but the look for a row mode's hold, whose
  // helpers are in 01_holders.sql since version 10; fence_epoch.sql holds a part of version 5's
  // advisory_fence.sql since version 7).
  pqxx::connection holder(owner_);
  for (const auto& f : b.migrations) {
    if (sql::migration_version(f.name) > 5) continue;
    pqxx::nontransaction tx(holder);
    tx.exec(sqlock::postgres::render(f.text, schema, ""));
  }
  for (auto file : {"00_common.sql", "01_holders.sql", "fence_epoch.sql", "advisory_fence.sql",
                    "acquire_advisory.sql"}) {
    pqxx::nontransaction tx(holder);
    tx.exec(sqlock::postgres::render(b.routine(file), schema, ""));
  }
  auto name = unique_name("v5-hold");
  std::uint64_t old_fence = 0;
  {
    pqxx::nontransaction tx(holder);
    old_fence =
        tx.exec_params1("SELECT fence FROM " + schema + ".acquire_advisory($1, 'v5-owner', 'v5')",
                        name)[0]
            .as<std::uint64_t>();
  }
  auto owner = pg::with(owner_, "schema=" + schema);
  sqlock::connect(pg::with(owner, "migrate=auto"));  // V006 and the new routines, hold live

  auto c = sqlock::connect(pg::with(owner, "mode=advisory"));
  auto listed = c.list(name);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].fence, old_fence);
  EXPECT_EQ(listed[0].owner, "v5-owner");
  EXPECT_EQ(listed[0].kind, lock_kind::exclusive);
  auto rw = c.make_shared_mutex(name);
  EXPECT_FALSE(rw.try_lock_shared());  // every kind is kept out by the old hold
  EXPECT_FALSE(rw.try_lock());
  EXPECT_FALSE(c.make_semaphore(name, 2).try_acquire());
  {
    pqxx::nontransaction tx(holder);  // released by its session through the new routine
    EXPECT_TRUE(tx.exec_params1("SELECT " + schema + ".release_advisory($1, 'v5-owner')", name)[0]
                    .as<bool>());
  }
  ASSERT_TRUE(rw.try_lock_shared());
  EXPECT_GT(rw.fence(), old_fence);  // fences keep rising across the migration
  const auto shared_fence = rw.fence();
  auto other = c.make_shared_mutex(name);
  EXPECT_FALSE(other.try_lock());
  rw.unlock_shared();
  ASSERT_TRUE(other.try_lock());
  EXPECT_GT(other.fence(), shared_fence);
  other.unlock();
}

TEST_F(postgres, advisory_shared_and_permit_holds_as_the_execute_only_role) {
  auto a = sqlock::connect(pg::with(app_, "mode=advisory"), patient_tries());
  auto b = sqlock::connect(pg::with(app_, "mode=advisory"), patient_tries());
  auto name = unique_name("adv-shared");
  auto ra = a.make_shared_mutex(name);
  auto rb = b.make_shared_mutex(name);
  ra.lock_shared();
  rb.lock_shared();
  auto rows = a.list(name);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.kind, lock_kind::shared);
    EXPECT_EQ(r.mode, "advisory");
    EXPECT_EQ(r.expires_at, "");
  }
  {
    auto dc = dba();
    pqxx::work tx(dc);
    EXPECT_TRUE(sqlock::postgres::fence_check(tx, name, ra.fence()));
    EXPECT_TRUE(sqlock::postgres::fence_check(tx, name, rb.fence()));
  }
  // A semaphore of the same name while it is a shared lock: a clear error.
  EXPECT_THROW(a.make_semaphore(name, 2).try_acquire(), config_error);
  ra.unlock_shared();
  rb.unlock_shared();
  EXPECT_TRUE(a.list(name).empty());
  {
    // The released holds' rows stay, freed, until a sweep (by the EXECUTE-only role; another
    // test's sweep may run first) deletes them.
    auto rows_of_name = [&] {
      auto dc = dba();
      pqxx::nontransaction tx(dc);
      return tx.exec_params1("SELECT count(*) FROM sqlock.advisory_shared WHERE name = $1", name)[0]
          .as<int>();
    };
    EXPECT_LE(rows_of_name(), 2);
    a.sweep();
    EXPECT_EQ(rows_of_name(), 0);
  }

  auto sem = unique_name("adv-sem");
  auto p1 = a.make_semaphore(sem, 2).acquire();
  auto p2 = b.make_semaphore(sem, 2).acquire();
  ASSERT_TRUE(p1 && p2);
  rows = a.list(sem);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.kind, lock_kind::permit);
    EXPECT_EQ(r.permits, 2u);
  }
  EXPECT_FALSE(a.make_semaphore(sem, 2).try_acquire());
  EXPECT_FALSE(a.make_lock(sem).try_lock());  // permits keep exclusive holds out
  EXPECT_THROW(b.make_semaphore(sem, 3).try_acquire(), config_error);
  EXPECT_THROW(b.make_shared_mutex(sem).try_lock_shared(), config_error);
  // force_release ends every permit: their sessions are terminated.
  auto admin = sqlock::connect(pg::with(owner_, "mode=advisory"));
  EXPECT_TRUE(admin.force_release(sem));
  EXPECT_TRUE(eventually([&] { return p1.lost() && p2.lost(); }));
  EXPECT_TRUE(a.list(sem).empty());
  auto p3 = b.make_semaphore(sem, 3).try_acquire_for(std::chrono::seconds(5));
  ASSERT_TRUE(p3);  // the name is idle: the next request sets the count
  EXPECT_GT(p3.fence(), std::max(p1.fence(), p2.fence()));
  p3.release();
}

TEST_F(postgres, advisory_session_taking_a_name_shared_after_exclusive_lists_only_the_new_hold) {
  // One lock session: the released exclusive hold's row stays (stale), the same session then
  // holds the same key in share mode.
  auto c = sqlock::connect(pg::with(app_, "mode=advisory&sessions=1&waiters=0"));
  auto name = unique_name("adv-reuse");
  auto rw = c.make_shared_mutex(name);
  ASSERT_TRUE(rw.try_lock());
  const auto exclusive_fence = rw.fence();
  rw.unlock();
  ASSERT_TRUE(rw.try_lock_shared());
  auto rows = c.list(name);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kind, lock_kind::shared);
  EXPECT_EQ(rows[0].fence, rw.fence());
  {
    auto dc = dba();
    pqxx::work tx(dc);
    EXPECT_FALSE(sqlock::postgres::fence_check(tx, name, exclusive_fence));
    EXPECT_TRUE(sqlock::postgres::fence_check(tx, name, rw.fence()));
  }
  rw.unlock_shared();
  ASSERT_TRUE(rw.try_lock());  // and back: the stale shared row is gone, the new hold listed
  rows = c.list(name);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kind, lock_kind::exclusive);
  rw.unlock();
}

TEST_F(postgres, advisory_writer_waiting_in_the_server_keeps_new_readers_out) {
  auto name = unique_name("adv-writer");
  // patient_tries: each client's first call, a single try among them, opens its connection.
  auto a = sqlock::connect(pg::with(app_, "mode=advisory"), patient_tries());
  // As the DBA's role: pg_stat_activity shows the wait events of other roles' sessions only to
  // privileged roles.
  auto w =
      sqlock::connect(pg::with(owner_, "mode=advisory&application_name=" + name), patient_tries());
  auto r = a.make_shared_mutex(name);
  r.lock_shared();
  std::uint64_t writer_fence = 0;
  std::thread writer([&] {
    auto x = w.make_shared_mutex(name);
    if (x.try_lock_for(std::chrono::seconds(20))) {
      writer_fence = x.fence();
      x.unlock();
    }
  });
  auto dc = dba();
  EXPECT_TRUE(eventually([&] {
    pqxx::nontransaction tx(dc);
    return tx.exec1("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + name +
                    "' AND wait_event_type = 'Lock' AND wait_event = 'advisory'")[0]
               .as<int>() == 1;
  }));
  // Only a reader holds, but the queued writer comes first: a try and a short wait are busy.
  auto late = sqlock::connect(pg::with(app_, "mode=advisory"), patient_tries());
  auto l = late.make_shared_mutex(name);
  EXPECT_FALSE(l.try_lock_shared());
  EXPECT_FALSE(l.try_lock_shared_for(std::chrono::milliseconds(200)));
  const auto reader_fence = r.fence();
  r.unlock_shared();
  writer.join();
  EXPECT_GT(writer_fence, reader_fence);
  ASSERT_TRUE(l.try_lock_shared_for(std::chrono::seconds(5)));
  EXPECT_GT(l.fence(), writer_fence);
  l.unlock_shared();
}

}  // namespace
}  // namespace sqlock::test
