// The stores the asynchronous API's tests run on (memory, SQLite, the servers), as a fixture
// parameter: each test connects to a fresh store of that kind; and the process's thread count.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sqlock/client.hpp"
#include "test_env.hpp"

namespace sqlock::test {

/// The threads of this process now (/proc/self/task).
inline int thread_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

/// A store under test: its label and the variable of its URL (null: a local store).
struct async_store {
  std::string label;
  const char* url_var;
};

/// The stores of the asynchronous tests: local ones, then PostgreSQL (two modes), Redis, and
/// `more` (ZooKeeper and etcd) when asked.
inline auto async_stores(bool more) {
  std::vector<async_store> s{{"memory", nullptr},
                             {"sqlite", nullptr},
                             {"postgres", "SQLOCK_TEST_POSTGRES_URL"},
                             {"postgres_advisory", "SQLOCK_TEST_POSTGRES_URL"},
                             {"redis", "SQLOCK_TEST_REDIS_URL"}};
  if (more) {
    s.push_back({"zookeeper", "SQLOCK_TEST_ZOOKEEPER_URL"});
    s.push_back({"etcd", "SQLOCK_TEST_ETCD_URL"});
  }
  return ::testing::ValuesIn(s);
}

/// A fixture connecting to the store of its parameter.
class async_store_test : public ::testing::TestWithParam<async_store> {
 protected:
  void SetUp() override {
    const auto& s = GetParam();
    if (s.label == "memory") {
      url_ = "memory:" + unique_name("store");
    } else if (s.label == "sqlite") {
      url_ = "sqlite:" + (dir_.path / "async.db").string();
    } else {
      SQLOCK_REQUIRE_URL(s.url_var, url_);
    }
    // migrate=auto: on fresh servers these tests may run before any that creates the schema.
    const auto add = [&](const char* option) {
      url_ += (url_.find('?') == std::string::npos ? "?" : "&") + std::string(option);
    };
    if (s.label == "postgres") add("migrate=auto");
    if (s.label == "postgres_advisory") add("mode=advisory&migrate=auto");
    // These tests are about the forms, not the server's latency: a reply may take longer than
    // Redis's default 2 s on a loaded CI machine (a full run saw a lock call fail with "read
    // failed" beside a chaos run's fsync-always servers).
    if (s.label == "redis") add("timeout=10s");
  }
  /// A new client of the store, warmed up: one lock taken and given back, so that its first
  /// attempt under a short deadline does not also open a session (slow on a loaded machine);
  /// and each attempt given 1 s (patient_tries): a first wait also registers the request or
  /// opens a connection more, which a full run once saw outlast a 300 ms deadline.
  client connect() const {
    auto c = sqlock::connect(url_, patient_tries());
    c.make_lock(unique_name("warm-up")).try_acquire_for(std::chrono::seconds(10));
    return c;
  }

  temp_dir dir_;
  std::string url_;
};

/// The parameter's label as the test name's suffix.
inline std::string store_label(const ::testing::TestParamInfo<async_store>& p) {
  return p.param.label;
}

}  // namespace sqlock::test
