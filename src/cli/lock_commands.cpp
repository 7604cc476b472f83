// The commands that hold a lock of some kind while CMD runs: `run` (exclusive, --shared,
// --permits N, --at-least/--at-most through run_exclusive()), `hold`, `elect`, and `leader`,
// which reads who leads.
#include <iostream>
#include <nlohmann/json.hpp>

#include "held_command.hpp"
#include "sqlock/url.hpp"

namespace sqlock::cli {
namespace {

// `run --at-least/--at-most`: CMD is run_exclusive()'s job.
int run_scheduled(held_command& s, const run_args& a) {
  run_options o{
      .wait = s.wait() ? *s.wait() : milliseconds::max(), .lease = s.lease(), .stop = s.stop()};
  if (!a.at_least.empty()) o.at_least = parse_duration(a.at_least);
  if (!a.at_most.empty()) o.at_most = parse_duration(a.at_most);
  if (!a.at_most.empty() && o.at_most < milliseconds(500))
    throw config_error("--at-most " + a.at_most + " is too short (minimum 500ms)");
  int code = a.conflict_exit;
  bool ran = run_exclusive(s.store(), a.name, o, [&](hold& h) {
    auto lost = s.on_lost();
    h.on_lost(lost);
    if (h.lost()) lost(a.name);  // lost before the callback was set
    code = s.run(fence_text(h), h.owner());
  });
  return ran ? code : s.not_obtained();
}

int run_shared(held_command& s, const run_args& a) {
  auto m = s.store().make_shared_mutex(a.name, {.lease = s.lease()});
  m.on_lost(s.on_lost());
  if (!(s.wait() ? m.try_lock_shared_for(*s.wait(), s.stop()) : (m.lock_shared(s.stop()), true)))
    return s.not_obtained();
  int code = s.run(fence_text(m), m.owner());
  m.unlock_shared();
  return code;
}

// Waits for the exclusive lock as --wait says; a signal stops the wait (interrupted).
bool lock_for(held_command& s, mutex& l) {
  if (s.wait()) return l.try_lock_for(*s.wait(), s.stop());
  l.lock(s.stop());
  return true;
}

int run_permit(held_command& s, const run_args& a) {
  auto sem = s.store().make_semaphore(a.name, a.permits, {.lease = s.lease()});
  permit p = s.wait() ? sem.try_acquire_for(*s.wait(), s.stop()) : sem.acquire(s.stop());
  if (!p) return s.not_obtained();
  auto lost = s.on_lost();
  p.on_lost(lost);
  if (p.lost()) lost(a.name);
  return s.run(fence_text(p), p.owner());  // the permit is released as `p` goes
}

}  // namespace

int run_command(const run_args& a) {
  if (a.command.empty() && a.shell_command.empty())
    throw config_error("run needs a command after -- (or -c STRING)");
  held_command s(a);
  return s.waiting([&] {
    if (!a.at_least.empty() || !a.at_most.empty()) return run_scheduled(s, a);
    if (a.shared) return run_shared(s, a);
    if (a.permits > 0) return run_permit(s, a);
    auto l = s.store().make_lock(a.name, {.lease = s.lease()});
    l.on_lost(s.on_lost());
    if (!lock_for(s, l)) return s.not_obtained();
    int code = s.run(fence_text(l), l.owner());
    l.unlock();
    return code;
  });
}

int hold_command(const run_args& a) {
  held_command s(a);
  return s.waiting([&] {
    auto l = s.store().make_lock(a.name, {.lease = s.lease()});
    l.on_lost(s.on_lost());
    if (!lock_for(s, l)) return s.not_obtained();
    int code = s.hold_until_signal(fence_text(l));
    l.unlock();
    return code;
  });
}

int elect_command(const run_args& a) {
  if (a.command.empty() && a.shell_command.empty())
    throw config_error("elect needs a command after -- (or -c STRING)");
  if (a.value.empty()) throw config_error("elect needs --value (what `sqlock leader` shows)");
  held_command s(a);
  return s.waiting([&] {
    auto e = s.store().make_election(a.name, {.lease = s.lease()});
    e.on_lost(s.on_lost());
    if (!(s.wait() ? e.campaign_for(a.value, *s.wait(), s.stop())
                   : (e.campaign(a.value, s.stop()), true)))
      return s.not_obtained();
    std::string term;
    try {
      term = std::to_string(e.term());
    } catch (const unsupported&) {
      // No fencing on this backend: no term either.
    }
    int code = s.run(term, "");
    e.resign();
    return code;
  });
}

int leader_command(const std::string& url_text, const std::string& name, bool json) {
  auto c = connect(resolve_url(url_text));
  auto l = c.make_election(name).leader();
  if (json) {
    nlohmann::json j = nullptr;
    if (l) j = {{"value", l->value}, {"term", l->term}};
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (l) {
    std::cout << l->value << "\n" << l->term << "\n";
  } else {
    std::cerr << "sqlock: nobody leads " << name << "\n";
  }
  return l ? ok : 1;
}

}  // namespace sqlock::cli
