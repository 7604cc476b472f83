// Google Benchmark: one lock/unlock pair on the local backends, beside the raw ceilings measured
// in the same run: flock(2) on a file (the kernel's own lock) and raw SQLite transactions doing
// the same row insert/delete without sqlock.
//   build/tests/benchmarks/sqlock_local_bench --benchmark_min_time=2
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>

#include "backends/sqlite/dialect.hpp"
#include "sqlock/client.hpp"
#include "sqlock/random.hpp"

namespace {

std::string temp_path(const std::string& stem) {
  return (std::filesystem::temp_directory_path() /
          (stem + "-" + sqlock::random_token().substr(0, 8)))
      .string();
}

void flock_pair(benchmark::State& state) {
  auto path = temp_path("sqlock-bench-flock");
  int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  for (auto _ : state) {
    ::flock(fd, LOCK_EX);
    ::flock(fd, LOCK_UN);
  }
  ::close(fd);
  std::filesystem::remove(path);
}
BENCHMARK(flock_pair);

void exec(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) std::abort();
}

// The ceiling for the SQLite backend: the same two write transactions sqlock's pessimistic
// mode makes (insert a row, delete it), on the same journal settings, without sqlock.
void sqlite_raw_insert_delete(benchmark::State& state) {
  auto path = temp_path("sqlock-bench-raw") + ".db";
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  exec(db,
       "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
       "CREATE TABLE t (name TEXT PRIMARY KEY, owner TEXT, expires INTEGER) WITHOUT ROWID;");
  sqlite3_stmt *begin, *commit, *ins, *del;
  sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, nullptr);
  sqlite3_prepare_v2(db, "COMMIT", -1, &commit, nullptr);
  sqlite3_prepare_v2(db, "INSERT INTO t VALUES ('n', ?1, 0) ON CONFLICT DO NOTHING", -1, &ins,
                     nullptr);
  sqlite3_prepare_v2(db, "DELETE FROM t WHERE name = 'n' AND owner = ?1", -1, &del, nullptr);
  std::string owner = sqlock::random_token();
  auto step = [](sqlite3_stmt* s) {
    sqlite3_step(s);
    sqlite3_reset(s);
  };
  for (auto _ : state) {
    sqlite3_bind_text(ins, 1, owner.data(), static_cast<int>(owner.size()), SQLITE_STATIC);
    sqlite3_bind_text(del, 1, owner.data(), static_cast<int>(owner.size()), SQLITE_STATIC);
    step(begin);
    step(ins);
    step(commit);
    step(begin);
    step(del);
    step(commit);
  }
  for (auto* s : {begin, commit, ins, del}) sqlite3_finalize(s);
  sqlite3_close(db);
  std::filesystem::remove(path);
}
BENCHMARK(sqlite_raw_insert_delete);

// The ceiling for sqlock's own SQL: the very statements of sql/sqlite/ (acquire and release,
// pessimistic mode) run through the raw SQLite API, prepared once, without the library around them.
void sqlite_raw_same_statements(benchmark::State& state) {
  auto path = temp_path("sqlock-bench-same") + ".db";
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlock::sqlite::install_functions(db);
  exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
  const auto& b = sqlock::sql::bundle_sqlite();
  exec(db, std::string(b.migrations.at(0).text).c_str());
  auto prepare_all = [&](std::string_view text) {
    std::vector<sqlite3_stmt*> out;
    const char* tail = text.data();
    const char* end = text.data() + text.size();
    while (tail < end) {
      sqlite3_stmt* st = nullptr;
      sqlite3_prepare_v2(db, tail, static_cast<int>(end - tail), &st, &tail);
      if (st) out.push_back(st);
    }
    return out;
  };
  auto acquire = prepare_all(b.routine("acquire_pessimistic.sql"));
  auto release = prepare_all(b.routine("release_pessimistic.sql"));
  sqlite3_stmt *begin, *commit;
  sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, nullptr);
  sqlite3_prepare_v2(db, "COMMIT", -1, &commit, nullptr);
  const std::string name = "bench", holder = "bench";
  auto run = [&](const std::vector<sqlite3_stmt*>& stmts, const std::string& owner) {
    sqlite3_step(begin);
    sqlite3_reset(begin);
    for (auto* st : stmts) {
      for (int i = 1; i <= sqlite3_bind_parameter_count(st); ++i) {
        std::string_view p = sqlite3_bind_parameter_name(st, i);
        if (p == ":name")
          sqlite3_bind_text(st, i, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
        if (p == ":owner")
          sqlite3_bind_text(st, i, owner.data(), static_cast<int>(owner.size()), SQLITE_STATIC);
        if (p == ":holder")
          sqlite3_bind_text(st, i, holder.data(), static_cast<int>(holder.size()), SQLITE_STATIC);
        if (p == ":lease_ms") sqlite3_bind_int64(st, i, 30000);
      }
      while (sqlite3_step(st) == SQLITE_ROW) {
      }
      sqlite3_reset(st);
    }
    sqlite3_step(commit);
    sqlite3_reset(commit);
  };
  for (auto _ : state) {
    std::string owner = sqlock::random_token();  // sqlock draws one per acquisition too
    run(acquire, owner);
    run(release, owner);
  }
  for (auto* st : acquire) sqlite3_finalize(st);
  for (auto* st : release) sqlite3_finalize(st);
  sqlite3_finalize(begin);
  sqlite3_finalize(commit);
  sqlite3_close(db);
  for (auto* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}
BENCHMARK(sqlite_raw_same_statements);

void sqlock_pair(benchmark::State& state, const std::string& url) {
  auto c = sqlock::connect(url);
  auto l = c.make_lock("bench:" + sqlock::random_token().substr(0, 8));
  for (auto _ : state) {
    l.lock();
    l.unlock();
  }
}

void sqlock_memory(benchmark::State& state) {
  sqlock_pair(state, "memory:bench");
}
BENCHMARK(sqlock_memory);

void sqlock_reentrant(benchmark::State& state) {
  auto c = sqlock::connect("memory:bench");
  auto l = c.make_lock("reentrant");
  l.lock();
  for (auto _ : state) {
    l.lock();
    l.unlock();
  }
  l.unlock();
}
BENCHMARK(sqlock_reentrant);

void sqlock_sqlite(benchmark::State& state, const char* mode) {
  auto path = temp_path("sqlock-bench") + ".db";
  sqlock_pair(state, "sqlite:" + path + "?mode=" + mode);
  for (auto* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}
BENCHMARK_CAPTURE(sqlock_sqlite, pessimistic, "pessimistic");
BENCHMARK_CAPTURE(sqlock_sqlite, optimistic, "optimistic");

}  // namespace

BENCHMARK_MAIN();
