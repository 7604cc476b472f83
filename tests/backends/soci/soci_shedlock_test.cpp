// compat=shedlock through SOCI, on every database SOCI is built for, beside ShedLock's own
// statements (tests/support/shedlock_statements.hpp): the same rows and rules as the native
// backends' compat=shedlock.
#include "shedlock_statements.hpp"
#include "soci_env.hpp"

namespace sqlock::test {
namespace {

class soci_shedlock : public ::testing::TestWithParam<std::string> {
 protected:
  /// The soci+ URL of the parameter's database (a file of this test's own for SQLite) and the
  /// peer's statements there; skips (or fails under SQLOCK_TEST_REQUIRE_ALL) without a server.
  bool setup(std::string& url, shedlock_sql& peer) {
    const auto& db = GetParam();
    if (db == "sqlite3") {
      url = "soci+sqlite3:" + (dir_.path / "s.db").string();
      peer = shedlock::sqlite::peer;
      return true;
    }
    url = soci_url(server_url_var(db));
    if (url.empty()) {
      if (require_all()) ADD_FAILURE() << server_url_var(db) << " is not set";
      return false;
    }
    peer = db == "postgresql" ? shedlock::postgres::peer : shedlock::mysql::peer;
    return true;
  }
  temp_dir dir_;
};

std::string label(const ::testing::TestParamInfo<std::string>& i) {
  return i.param;
}

}  // namespace

TEST_P(soci_shedlock, peer_and_sqlock_exclude_each_other) {
  std::string url;
  shedlock_sql peer{};
  if (!setup(url, peer)) GTEST_SKIP() << server_url_var(GetParam()) << " is not set";
  shedlock_both_ways(url, peer);
}

TEST_P(soci_shedlock, at_least_leaves_lock_until_as_shedlock_does) {
  std::string url;
  shedlock_sql peer{};
  if (!setup(url, peer)) GTEST_SKIP() << server_url_var(GetParam()) << " is not set";
  shedlock_at_least(url, peer);
}

TEST_P(soci_shedlock, compat_config_errors) {
  std::string url;
  shedlock_sql peer{};
  if (!setup(url, peer)) GTEST_SKIP() << server_url_var(GetParam()) << " is not set";
  shedlock_config_errors(url);
}

INSTANTIATE_TEST_SUITE_P(soci, soci_shedlock, ::testing::ValuesIn(soci_databases()), label);

}  // namespace sqlock::test
