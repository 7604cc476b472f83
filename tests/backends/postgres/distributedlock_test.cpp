// compat=distributedlock and compat=raw on PostgreSQL beside a raw session that takes the key
// as the peer does. The keys are vectors computed from DistributedLock's algorithm in
// src/DistributedLock.Postgres/PostgresAdvisoryLockKey.cs (github.com/madelson/DistributedLock):
// TryEncodeAscii (<= 9 ASCII chars, 7 bits each, a 0 bit, then 1s), TryEncodeHashString (16 hex
// digits → one bigint; XXXXXXXX,XXXXXXXX → two ints), HashString (SHA-1, first 8 bytes
// little-endian; allowHashing only). PostgresAdvisoryLock.cs takes them with
// pg_advisory_lock(bigint) / (int, int), and PostgresDistributedReaderWriterLock with _shared.
#include <thread>

#include "pg_env.hpp"
#include "sqlock/shared_mutex.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

struct vector_case {
  std::string name, key;  // key: the peer's arguments of pg_advisory_lock
  bool hashing = false;
};

const vector_case cases[] = {
    {"job", "-3044692832846610433"},                        // ASCII
    {"nightly-1", "-2474940688006075038"},                  // ASCII, 9 characters
    {"0123456789abcdef", "81985529216486895"},              // 16 hex digits
    {"00000001,ffffffff", "1, -1"},                         // two 8-hex-digit ints
    {"nightly-report-2026", "-5000501593355644128", true},  // hashed (allowHashing)
};

bool peer_try(pqxx::connection& c, const std::string& fn, const std::string& key) {
  pqxx::nontransaction tx(c);
  return tx.exec1("SELECT " + fn + "(" + key + ")")[0].as<bool>();
}

}  // namespace

TEST_F(postgres, distributedlock_keys_are_the_peers_both_ways) {
  pqxx::connection peer(owner_);
  for (const auto& v : cases) {
    SCOPED_TRACE(v.name);
    auto c = connect(pg::with(
        owner_, std::string("compat=distributedlock") + (v.hashing ? "&allow_hashing=true" : "")));
    auto m = c.make_lock(v.name);
    ASSERT_TRUE(peer_try(peer, "pg_try_advisory_lock", v.key));
    EXPECT_FALSE(m.try_lock());
    ASSERT_TRUE(peer_try(peer, "pg_advisory_unlock", v.key));
    ASSERT_TRUE(m.try_lock());
    EXPECT_FALSE(peer_try(peer, "pg_try_advisory_lock", v.key));
    EXPECT_THROW((void)m.fence(), unsupported);
    m.unlock();
    EXPECT_TRUE(peer_try(peer, "pg_try_advisory_lock", v.key));
    EXPECT_TRUE(peer_try(peer, "pg_advisory_unlock", v.key));
  }
}

TEST_F(postgres, distributedlock_reader_writer_lock_is_shared_advisory) {
  pqxx::connection peer(owner_);
  auto c = connect(pg::with(owner_, "compat=distributedlock"));
  auto rw = c.make_shared_mutex("rw-1");
  const std::string key = "-1883231318347612161";  // ASCII "rw-1"
  ASSERT_TRUE(peer_try(peer, "pg_try_advisory_lock_shared", key));
  EXPECT_TRUE(rw.try_lock_shared());  // readers share
  rw.unlock_shared();
  EXPECT_FALSE(rw.try_lock());  // a writer waits for the peer's reader
  ASSERT_TRUE(peer_try(peer, "pg_advisory_unlock_shared", key));
  ASSERT_TRUE(rw.try_lock());
  EXPECT_FALSE(peer_try(peer, "pg_try_advisory_lock_shared", key));  // and the other way round
  rw.unlock();
}

TEST_F(postgres, raw_keys_and_the_list_of_others_locks) {
  pqxx::connection peer(owner_);
  auto raw = connect(pg::with(owner_, "compat=raw"));
  auto m = raw.make_lock("7,-8");
  ASSERT_TRUE(peer_try(peer, "pg_try_advisory_lock", "7, -8"));
  EXPECT_FALSE(m.try_lock());
  ASSERT_TRUE(peer_try(peer, "pg_try_advisory_lock", "-5000501593355644127"));
  auto listed = [](const sqlock::client& c, const std::string& name) {
    for (const auto& s : c.list(name))
      if (s.name == name) return true;
    return false;
  };
  EXPECT_TRUE(listed(raw, "7,-8"));
  EXPECT_TRUE(listed(raw, "-5000501593355644127"));
  auto dl = connect(pg::with(owner_, "compat=distributedlock"));
  EXPECT_TRUE(listed(dl, "00000007,fffffff8"));
  EXPECT_TRUE(listed(dl, "ba9aa64b6d431321"));  // a key of no ASCII name shows as its key
  ASSERT_TRUE(peer_try(peer, "pg_try_advisory_lock", "-2763064694496296961"));
  EXPECT_TRUE(listed(dl, "listed"));  // the ASCII encoding reverses
  EXPECT_THROW(dl.make_lock("a name of no format").try_lock(), config_error);
  EXPECT_THROW(raw.make_lock("x").try_lock(), config_error);
}

TEST_F(postgres, distributedlock_waiters_queue_in_the_server_with_the_peers) {
  // A waiting sqlock writer waits in the server's queue, as the peer's blocking acquire does: a
  // reader arriving after it (the peer's, by pg_try_advisory_lock_shared) is held off, and the
  // writer has the lock at the moment the peer's reader lets go.
  pqxx::connection peer(owner_), late(owner_), watch(owner_);
  auto c = connect(pg::with(owner_, "compat=distributedlock"));
  auto rw = c.make_shared_mutex("rw-q");
  const std::string key = "-1883226920301101057";  // ASCII "rw-q"
  ASSERT_TRUE(peer_try(peer, "pg_try_advisory_lock_shared", key));
  sqlock::hold writing;
  std::thread writer([&] { writing = rw.try_acquire_for(30s); });
  auto queued = [&] {
    pqxx::nontransaction w(watch);
    return w.exec1(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                "AND objsubid = 1 AND (classid::bigint << 32 | objid::bigint) = " +
                key)[0]
               .as<int>() == 1;
  };
  EXPECT_TRUE(eventually(queued));
  EXPECT_FALSE(peer_try(late, "pg_try_advisory_lock_shared", key));  // behind the writer
  const auto released = std::chrono::steady_clock::now();
  ASSERT_TRUE(peer_try(peer, "pg_advisory_unlock_shared", key));
  writer.join();
  EXPECT_TRUE(writing);
  EXPECT_LT(std::chrono::steady_clock::now() - released, 2s);
}

}  // namespace sqlock::test
