// sqlock::doctor(): the store and mode of a URL, then the checks its backend offers.
#include "sqlock/doctor.hpp"

#include <cmath>

#include "sqlock/errors.hpp"

namespace sqlock {

const char* to_string(finding_status s) noexcept {
  switch (s) {
    case finding_status::ok:
      return "ok";
    case finding_status::warn:
      return "warn";
    case finding_status::unsafe:
      return "unsafe";
    case finding_status::error:
      return "error";
  }
  return "error";
}

bool healthy(const std::vector<finding>& findings) noexcept {
  for (const auto& f : findings)
    if (f.status == finding_status::unsafe || f.status == finding_status::error) return false;
  return true;
}

void run_check(std::vector<finding>& out, const std::string& check,
               const std::function<void()>& fn) {
  try {
    fn();
  } catch (const connection_error&) {
    throw;
  } catch (const auth_error&) {
    throw;
  } catch (const std::exception& e) {
    out.push_back({check, finding_status::error, e.what()});
  }
}

std::string human_duration(std::chrono::milliseconds d) {
  const auto ms = d.count();
  if (ms < 1000 && ms > -1000) return std::to_string(ms) + " ms";
  if (ms < 60000 && ms > -60000) {
    std::string s =
        std::to_string(ms / 1000) + "." + std::to_string((ms < 0 ? -ms : ms) % 1000 / 100);
    return s + " s";
  }
  return std::to_string(ms / 60000) + " min";
}

finding clock_finding(const std::string& check, std::chrono::system_clock::time_point before,
                      std::chrono::system_clock::time_point after, double server_seconds,
                      const std::string& note) {
  const double mid =
      std::chrono::duration<double>((before + (after - before) / 2).time_since_epoch()).count();
  const auto offset = std::chrono::milliseconds(std::llround((server_seconds - mid) * 1000));
  const auto rtt = std::chrono::duration_cast<std::chrono::milliseconds>(after - before);
  return {check,
          std::chrono::abs(offset) > std::chrono::seconds(1) ? finding_status::warn
                                                             : finding_status::ok,
          "the server's clock is " + human_duration(offset) + " from this machine's (round trip " +
              human_duration(rtt) + "); " + note};
}

std::vector<finding> doctor(const std::string& url, steady_time deadline) {
  auto b = make_backend(url);
  std::vector<finding> out;
  const auto mode = b->mode();
  out.push_back({"store", finding_status::ok,
                 b->kind() + (mode.empty() ? "" : " (mode " + mode + ")") + ": " + b->describe()});
  if (auto* d = b->diagnostics()) {
    auto found = d->check(deadline);
    out.insert(out.end(), found.begin(), found.end());
  } else {
    // No checks of its own: the connect check is all there is to report.
    b->verify(deadline);
    out.push_back(
        {"checks", finding_status::ok, "reachable; " + b->kind() + " offers no further checks"});
  }
  return out;
}

}  // namespace sqlock
