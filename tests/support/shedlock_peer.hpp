// ShedLock as a peer in raw SQL, for the compat=shedlock tests of every SQL database: each
// database's test file gives the statements ShedLock's JdbcTemplateStorageAccessor sends there
// (naming the source file of each rule); the checks here run them beside a sqlock client on the
// same table, both ways round.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "sql/sql_engine.hpp"
#include "sqlock/client.hpp"
#include "sqlock/run_exclusive.hpp"
#include "test_env.hpp"

namespace sqlock::test {

/// The peer's statements on one database, with `t` the table and `n` the quoted lock name.
struct shedlock_sql {
  /// One lock attempt for lockAtMostFor `ms`: insertRecord, then updateRecord (a statement
  /// that fails, as an insert of a duplicate name does, is skipped as ShedLock skips it).
  std::vector<std::string> (*lock)(const std::string& t, const std::string& n, int ms);
  /// unlock with lockAtLeastFor 0, by the peer's locked_by ('java-host').
  std::string (*unlock)(const std::string& t, const std::string& n);
  /// One row: locked_by, lock_until - locked_at in ms, lock_until - now in ms (server clock).
  std::string (*row)(const std::string& t, const std::string& n);
};

/// A compat=shedlock client on its own table (created through migrate(), dropped at the end)
/// and a pooled connection of it for the peer's raw SQL.
class shedlock_peer {
 public:
  shedlock_peer(const std::string& base_url, shedlock_sql sql)
      : sql_(sql), table_("shedlock_" + random_token().substr(0, 12)) {
    register_builtin_backends();
    const auto url = base_url + (base_url.find('?') == std::string::npos ? "?" : "&") +
                     "compat=shedlock&shedlock_table=" + table_;
    backend_ = std::dynamic_pointer_cast<sql::engine_backend>(make_backend(url));
    // SQLite (native or through SOCI) creates it on first use (the file is yours).
    if (backend_->kind().find("sqlite") == std::string::npos) {
      EXPECT_THROW(backend_->check_schema(), config_error);  // no table yet: named, not made
    }
    backend_->migrate();
    backend_->check_schema();
    client_ = std::make_unique<sqlock::client>(backend_);
  }
  ~shedlock_peer() {
    client_.reset();
    try {
      query("DROP TABLE " + table_);
    } catch (...) {
    }
  }

  sql::rows query(const std::string& text) {
    sql::rows r;
    backend_->with_connection([&](sql::connection& c) { r = c.query(text); });
    return r;
  }
  /// The peer's lock attempt; true when the row is the peer's afterwards.
  bool peer_lock(const std::string& name, int ms) {
    for (const auto& s : sql_.lock(table_, quoted(name), ms)) {
      try {
        query(s);
      } catch (const backend_error&) {  // the duplicate key of an insert
      }
    }
    return locked_by(name) == "java-host";
  }
  void peer_unlock(const std::string& name) { query(sql_.unlock(table_, quoted(name))); }
  std::string locked_by(const std::string& name) { return row(name)[0].value_or(""); }
  /// lock_until - locked_at and lock_until - now, in ms.
  std::pair<long, long> times(const std::string& name) {
    auto r = row(name);
    return {std::stol(r[1].value_or("0")), std::stol(r[2].value_or("0"))};
  }

  sqlock::client& client() { return *client_; }

 private:
  static std::string quoted(const std::string& s) { return "'" + s + "'"; }
  sql::row row(const std::string& name) {
    auto r = query(sql_.row(table_, quoted(name)));
    if (r.empty()) return {std::nullopt, std::nullopt, std::nullopt};
    return r[0];
  }

  shedlock_sql sql_;
  std::string table_;
  std::shared_ptr<sql::engine_backend> backend_;
  std::unique_ptr<sqlock::client> client_;
};

/// The peer holds → sqlock does not obtain; released → sqlock does, and its row is what
/// ShedLock reads (locked_at now, lock_until = locked_at + lease, its own locked_by), which the
/// peer cannot take until sqlock releases (the row is kept, lock_until = now).
inline void shedlock_both_ways(const std::string& url, shedlock_sql sql) {
  shedlock_peer p(url, sql);
  const auto name = unique_name("shed");
  ASSERT_TRUE(p.peer_lock(name, 30000));
  auto m = p.client().make_lock(name, {.lease = milliseconds(20000)});
  EXPECT_FALSE(m.try_lock_for(std::chrono::milliseconds(300)));
  p.peer_unlock(name);
  ASSERT_TRUE(m.try_lock());
  EXPECT_EQ(p.locked_by(name).substr(p.locked_by(name).size() - 33), " " + m.owner());
  auto [span, left] = p.times(name);
  EXPECT_NEAR(span, 20000, 5);     // lock_until = locked_at + lockAtMostFor
  EXPECT_NEAR(left, 20000, 2000);  // locked_at is the database's now
  EXPECT_FALSE(p.peer_lock(name, 30000));
  EXPECT_THROW((void)m.fence(), unsupported);  // ShedLock stores no token
  m.unlock();
  EXPECT_LE(p.times(name).second, 0);  // kept, lock_until = now
  EXPECT_TRUE(p.peer_lock(name, 30000));
  EXPECT_EQ(p.client().list(name).size(), 1u);  // the peer's hold, listed
  p.peer_unlock(name);
  EXPECT_TRUE(p.client().list(name).empty());
}

/// run_exclusive's at_least leaves lock_until = locked_at + at_least, as ShedLock's unlock does,
/// and the peer cannot take the name before then.
inline void shedlock_at_least(const std::string& url, shedlock_sql sql) {
  shedlock_peer p(url, sql);
  const auto name = unique_name("shed");
  ASSERT_TRUE(run_exclusive(
      p.client(), name, {.at_least = milliseconds(3000), .at_most = milliseconds(10000)}, [] {}));
  auto [span, left] = p.times(name);
  EXPECT_NEAR(span, 3000, 300);
  EXPECT_GT(left, 1000);
  EXPECT_FALSE(p.peer_lock(name, 30000));
}

/// compat= values and modes a layout cannot carry are config errors.
inline void shedlock_config_errors(const std::string& url) {
  register_builtin_backends();
  const std::string sep = url.find('?') == std::string::npos ? "?" : "&";
  try {
    (void)make_backend(url + sep + "compat=nope");
    ADD_FAILURE() << "compat=nope accepted";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("shedlock"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)make_backend(url + sep + "compat=shedlock&mode=optimistic"), config_error);
  EXPECT_THROW((void)make_backend(url + sep + "compat=shedlock&shedlock_table=a;b"), config_error);
  auto b = make_backend(url + sep + "compat=shedlock");
  EXPECT_FALSE(b->caps().fencing);
  EXPECT_EQ(b->mode(), "shedlock");
}

}  // namespace sqlock::test
