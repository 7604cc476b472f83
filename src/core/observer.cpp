// Event names, the logging observer and the fan-out observer (see sqlock/observer.hpp).
#include "sqlock/observer.hpp"

#include <cstdio>
#include <string>

namespace sqlock {

std::string_view to_string(event_type t) noexcept {
  switch (t) {
    case event_type::attempt:
      return "attempt";
    case event_type::acquired:
      return "acquired";
    case event_type::timeout:
      return "timeout";
    case event_type::retry:
      return "retry";
    case event_type::renewed:
      return "renewed";
    case event_type::renewal_failed:
      return "renewal_failed";
    case event_type::lost:
      return "lost";
    case event_type::released:
      return "released";
    case event_type::release_failed:
      return "release_failed";
  }
  return "unknown";
}

std::string_view to_string(log_level l) noexcept {
  switch (l) {
    case log_level::trace:
      return "trace";
    case log_level::debug:
      return "debug";
    case log_level::info:
      return "info";
    case log_level::warn:
      return "warn";
    case log_level::error:
      return "error";
    case log_level::off:
      return "off";
  }
  return "unknown";
}

log_level level_of(event_type t) noexcept {
  switch (t) {
    case event_type::attempt:
    case event_type::renewed:
      return log_level::trace;
    case event_type::acquired:
    case event_type::released:
      return log_level::debug;
    case event_type::timeout:
      return log_level::info;
    case event_type::retry:
    case event_type::renewal_failed:
    case event_type::release_failed:
      return log_level::warn;
    case event_type::lost:
      return log_level::error;
  }
  return log_level::error;
}

namespace {

const char* verb(event_type t) {
  switch (t) {
    case event_type::attempt:
      return "acquiring";
    case event_type::acquired:
      return "acquired";
    case event_type::timeout:
      return "gave up on";
    case event_type::retry:
      return "retrying";
    case event_type::renewed:
      return "renewed";
    case event_type::renewal_failed:
      return "renewal failed for";
    case event_type::lost:
      return "LOST";
    case event_type::released:
      return "released";
    case event_type::release_failed:
      return "release failed for";
  }
  return "?";
}

void append_ms(std::string& out, const char* what, std::chrono::nanoseconds d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s %.1f ms", what, static_cast<double>(d.count()) / 1e6);
  out += buf;
}

class logger final : public observer {
 public:
  logger(log_level min, log_sink sink) : min_(min), sink_(std::move(sink)) {}
  void notify(const event& e) noexcept override {
    auto level = level_of(e.type);
    if (!sink_ || min_ == log_level::off || level < min_) return;
    try {
      sink_(level, describe(e));
    } catch (...) {
      // A sink's failure must not reach the lock.
    }
  }

 private:
  log_level min_;
  log_sink sink_;
};

class fan final : public observer {
 public:
  explicit fan(std::vector<std::shared_ptr<observer>> t) : targets_(std::move(t)) {
    std::erase(targets_, nullptr);
  }
  void notify(const event& e) noexcept override {
    for (auto& t : targets_) t->notify(e);
  }

 private:
  std::vector<std::shared_ptr<observer>> targets_;
};

}  // namespace

std::string describe(const event& e) {
  std::string out = verb(e.type);
  out += " lock '";
  for (char ch : e.name) out += static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f ? '?' : ch;
  out += "' on ";
  out += e.backend;
  if (!e.mode.empty()) {
    out += " (";
    out += e.mode;
    out += ')';
  }
  std::string detail;
  auto add = [&](const std::string& s) { detail += (detail.empty() ? "" : ", ") + s; };
  if (e.fence != 0) add("fence " + std::to_string(e.fence));
  if (e.type == event_type::acquired || e.type == event_type::timeout) {
    std::string w;
    append_ms(w, "waited", e.wait);
    add(w);
  }
  if (e.contended) add("contended");
  if (e.held.count() > 0) {
    std::string h;
    append_ms(h, "held", e.held);
    add(h);
  }
  if (!e.error.empty()) add(std::string(e.error));
  if (!detail.empty()) out += ": " + detail;
  return out;
}

std::shared_ptr<observer> make_logger(log_level min, log_sink sink) {
  return std::make_shared<logger>(min, std::move(sink));
}

std::shared_ptr<observer> fan_out(std::vector<std::shared_ptr<observer>> targets) {
  return std::make_shared<fan>(std::move(targets));
}

}  // namespace sqlock
