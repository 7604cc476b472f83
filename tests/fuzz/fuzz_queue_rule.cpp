// libFuzzer target: the queue rule both queue-based backends use (core/queue_rule.hpp), against
// the independent restatement of queue_rules.hpp. Each input byte is one entry in arrival order:
// its kind (exclusive, shared, permit) and, for a permit, its N (1 to 4). For every entry:
// standing_of() holds exactly when the oracle says so (the first entry always); a waiter that
// waits for one entry waits for one before it: an exclusive entry for the entry just before it,
// a shared or permit entry for the nearest one of another kind; only a permit behind its N
// permits (nothing but permits before it) waits for any entry before it. check_permit_count()
// refuses a permit request exactly when a permit before it was made with another N.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/queue_rule.hpp"
#include "queue_rules.hpp"

using namespace sqlock;

namespace {

struct entry {
  lock_kind kind = lock_kind::exclusive;
  std::uint32_t permits = 0;
};

void check_standing(const std::vector<entry>& q, std::size_t i) {
  const auto& me = q[i];
  const auto s = queue_rule::standing_of(q, i);
  if (s.holds != sqlock::fuzz::holds(q, i) || s.holds != queue_rule::holds(q, i)) std::abort();
  if (i == 0 && !s.holds) std::abort();
  if (s.holds) return;
  if (s.any_before) {
    if (me.kind != lock_kind::permit || !sqlock::fuzz::only_own_kind_before(q, i) || i < me.permits)
      std::abort();
    return;
  }
  if (s.wait_for >= i) std::abort();
  if (me.kind == lock_kind::exclusive) {
    if (s.wait_for != i - 1) std::abort();
    return;
  }
  if (q[s.wait_for].kind == me.kind) std::abort();
  for (std::size_t j = s.wait_for + 1; j < i; ++j)
    if (q[j].kind != me.kind) std::abort();  // not the nearest of another kind
}

void check_permit_count(const std::vector<entry>& q, std::size_t i) {
  const auto& me = q[i];
  bool differs = false;
  for (std::size_t j = 0; j < i; ++j)
    differs = differs || (q[j].kind == lock_kind::permit && q[j].permits != me.permits);
  bool refused = false;
  try {
    queue_rule::check_permit_count(q, i, me.kind, me.permits, "name", "store");
  } catch (const config_error&) {
    refused = true;
  }
  if (refused != (me.kind == lock_kind::permit && differs)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<entry> q;
  for (std::size_t k = 0; k < size; ++k) {
    const std::uint8_t b = data[k];
    entry e;
    e.kind = b % 3 == 0 ? lock_kind::exclusive : b % 3 == 1 ? lock_kind::shared : lock_kind::permit;
    if (e.kind == lock_kind::permit) e.permits = 1 + (b / 3) % 4;
    q.push_back(e);
  }
  for (std::size_t i = 0; i < q.size(); ++i) {
    check_standing(q, i);
    check_permit_count(q, i);
  }
  return 0;
}
