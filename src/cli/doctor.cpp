// `sqlock doctor [URL] [--patroni REST_URL] [--json]`: what the store behind the URL is and
// whether the URL's mode is safe there (sqlock/doctor.hpp; the Patroni cluster through its
// REST API, doctor_patroni.cpp), one finding per line or one JSON object.
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "sqlock/doctor.hpp"
#include "sqlock/url.hpp"

namespace sqlock::cli {

namespace {
// The whole report's deadline: every check is bounded by it and by the backend's I/O timeout.
constexpr std::chrono::seconds report_time{30};
}  // namespace

int doctor_command(const std::string& url_given, const std::string& patroni_rest, bool json) {
  const auto url = resolve_url(url_given);
  const auto deadline = std::chrono::steady_clock::now() + report_time;
  auto findings = doctor(url, deadline);
  if (!patroni_rest.empty())
    for (auto& f : patroni_check(patroni_rest, url, deadline)) findings.push_back(std::move(f));
  const bool safe = healthy(findings);
  if (json) {
    auto arr = nlohmann::json::array();
    for (const auto& f : findings)
      arr.push_back({{"check", f.check}, {"status", to_string(f.status)}, {"message", f.message}});
    nlohmann::json out = {{"url", redact_url(url)}, {"safe", safe}, {"findings", arr}};
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    for (const auto& f : findings) {
      std::string status = to_string(f.status);
      status.resize(7, ' ');
      std::cout << status << f.check << ": " << f.message << "\n";
    }
  }
  return safe ? ok : unsafe_store;
}

}  // namespace sqlock::cli
