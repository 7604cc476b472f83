// compat= on PostgreSQL: picks the peer's layout and refuses a mode it cannot carry.
#include "compat.hpp"

#include <algorithm>

#include "peer_advisory.hpp"
#include "pooler.hpp"
#include "postgres_backend.hpp"
#include "shedlock.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::postgres {

std::shared_ptr<backend> open_compat(const std::string& conninfo, const std::string& shown,
                                     const options& o) {
  if (std::find(std::begin(compat_layouts), std::end(compat_layouts), o.compat) ==
      std::end(compat_layouts)) {
    std::string valid;
    for (auto c : compat_layouts) valid += (valid.empty() ? "" : ", ") + std::string(c);
    throw config_error("PostgreSQL compat must be one of " + valid + " (got '" + o.compat + "')");
  }
  if (o.compat != "shedlock") {  // the peer's advisory lock, on dedicated sessions
    if (o.mode == "optimistic")
      throw config_error("compat=" + o.compat + " takes the peer's advisory lock; mode=" + o.mode +
                         " cannot carry it (leave mode out)");
    if (moves_sessions(o.pooler)) refuse_advisory(o.pooler);
    return std::make_shared<peer_advisory_backend>(conninfo, shown, o);
  }
  // ShedLock's rows are leases on the database's clock: sqlock's row model, no other.
  if (o.mode != "pessimistic")
    throw config_error("compat=shedlock keeps ShedLock's rows and rules; mode=" + o.mode +
                       " cannot carry them (leave mode out)");
  auto so = o;
  so.listen = false;  // ShedLock's statements notify nobody: waiters back off
  return std::make_shared<pg_backend>(conninfo, shown, so, shedlock_dialect(o.shedlock_table));
}

}  // namespace sqlock::postgres
