// The C++ example of docs/cron.md, compiled and run by the tests (examples.scheduled_job): a job
// that many machines' crons start, run at most once per period with run_exclusive().
//   scheduled_job URL    prints "report with fence N" and "ran", or "not run"
#include <sqlock/client.hpp>

#include <cstdint>
#include <iostream>
#include <string>

namespace {
void make_report(std::uint64_t fence) {
  std::cout << "report with fence " << fence << "\n";
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: scheduled_job URL\n";
    return 2;
  }
  const std::string url = argv[1];
  // begin-snippet: run-exclusive
  auto c = sqlock::connect(url);  // e.g. "postgresql://sqlock@db/locks"
  bool ran = sqlock::run_exclusive(
      c, "nightly-report", {.at_least = std::chrono::minutes(10), .at_most = std::chrono::hours(2)},
      [](sqlock::hold& h) {
        h.on_lost([](const std::string&) { /* at_most: stop now */ });
        make_report(h.fence());
      });
  // end-snippet
  std::cout << (ran ? "ran" : "not run: this period's run has been made") << "\n";
}
