// The job scheduler example under fire: worker processes that die by SIGKILL in the middle of
// a job's transaction (after running it, before commit) are replaced until every job is done;
// then every job must have run exactly once (its committed effect counted in <table>_runs).
// On SQLite always, on PostgreSQL and MySQL when their test servers are configured.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "soci_databases.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

pid_t spawn(const std::vector<std::string>& args) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) ::dup2(null, 1);  // the workers' progress lines; errors stay on stderr
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(SQLOCK_JOB_SCHEDULER, argv.data());
  ::_exit(127);
}

int run(const std::vector<std::string>& args) {
  pid_t pid = spawn(args);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class job_scheduler : public ::testing::TestWithParam<std::string> {};

TEST_P(job_scheduler, no_job_runs_twice_when_workers_die_mid_transaction) {
  temp_dir tmp;
  std::string url;
  if (GetParam() == "sqlite3") {
    url = "soci+sqlite3:" + (tmp.path / "app.db").string();
  } else {
    std::string base;
    SQLOCK_REQUIRE_URL(server_url_var(GetParam()), base);
    url = "soci+" + base;
  }
  const std::string table = "sqlock_demo_" + random_token().substr(0, 10);
  const std::string exe = SQLOCK_JOB_SCHEDULER;
  ASSERT_EQ(run({exe, "init", url, table, "40"}), 0);

  const int workers = 4, max_crashes = 12;
  int crashes = 0, seed = 1;
  std::map<pid_t, bool> active;
  auto start = [&] {
    // Workers die in 30% of their jobs until enough have died; the rest finish the work.
    std::string rate = crashes < max_crashes ? "30" : "0";
    active[spawn({exe, "work", url, table, rate, std::to_string(seed++)})] = true;
  };
  for (int i = 0; i < workers; ++i) start();
  auto deadline = std::chrono::steady_clock::now() + 150s;  // liveness bound only
  bool timed_out = false;
  while (!active.empty()) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out = true;
        for (auto& [p, alive] : active) ::kill(p, SIGKILL);
        for (auto& [p, alive] : active) ::waitpid(p, &status, 0);
        break;
      }
      ::usleep(20000);
      continue;
    }
    if (pid < 0) break;
    active.erase(pid);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
      ++crashes;
      start();  // a replacement worker picks up the dead one's job
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "worker status " << status;
    }
  }
  ASSERT_FALSE(timed_out) << "workers did not finish the jobs in time";
  EXPECT_GT(crashes, 0);
  EXPECT_EQ(run({exe, "check", url, table}), 0) << "some job ran twice or not at all";
  EXPECT_EQ(run({exe, "drop", url, table}), 0);
}

INSTANTIATE_TEST_SUITE_P(soci, job_scheduler, ::testing::ValuesIn(soci_databases()),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace sqlock::test
