// The logging example of docs/operations.md, compiled and run by the tests (examples.logging):
// one line per lock event at or above a level, to a sink of the application's choice.
//   logging URL NAME    tries NAME for 300 ms; exit 0 when obtained, 1 when not
#include <sqlock/client.hpp>

#include <chrono>
#include <iostream>
#include <string>
#include <string_view>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: logging URL NAME\n";
    return 2;
  }
  const std::string url = argv[1];
  // begin-snippet: logging
  auto log =
      sqlock::make_logger(sqlock::log_level::info, [](sqlock::log_level lv, std::string_view line) {
        std::clog << sqlock::to_string(lv) << ": " << line << "\n";
      });  // or to syslog, spdlog, ...
  auto c = sqlock::connect(url, {.observer = log});
  // end-snippet
  auto l = c.make_lock(argv[2]);
  if (!l.try_lock_for(std::chrono::milliseconds(300))) return 1;
  l.unlock();
}
