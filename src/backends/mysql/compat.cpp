// compat= on MySQL/MariaDB: picks the peer's layout and refuses a mode it cannot carry.
#include "compat.hpp"

#include <algorithm>

#include "budget.hpp"
#include "dialect.hpp"
#include "mysql_driver.hpp"
#include "peer_get_lock.hpp"
#include "shedlock.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::mysql {

std::shared_ptr<backend> open_compat(const options& o, std::string url_text) {
  if (std::find(std::begin(compat_layouts), std::end(compat_layouts), o.compat) ==
      std::end(compat_layouts)) {
    std::string valid;
    for (auto c : compat_layouts) valid += (valid.empty() ? "" : ", ") + std::string(c);
    throw config_error("MySQL compat must be one of " + valid + " (got '" + o.compat + "')");
  }
  if (o.compat != "shedlock") {  // the peer's GET_LOCK lock, on sessions of its own
    if (o.mode == "optimistic")
      throw config_error("compat=" + o.compat + " takes the peer's GET_LOCK lock; mode=" + o.mode +
                         " cannot carry it (leave mode out)");
    return detail::open_peer_get_lock(o, std::move(url_text));
  }
  // ShedLock's rows are leases on the database's clock: sqlock's row model, no other.
  if (o.mode != "pessimistic")
    throw config_error("compat=shedlock keeps ShedLock's rows and rules; mode=" + o.mode +
                       " cannot carry them (leave mode out)");
  auto counter = std::make_shared<sql::connection_counter>();
  auto b = std::make_shared<sql::engine_backend>(
      sql_bundle(), shedlock_dialect(o.shedlock_table),
      [o, counter] { return detail::open_connection(o, counter); }, std::move(url_text),
      split_budget(o).statements, true, counter);
  b->set_io_timeout(o.timeout);
  b->set_release_in_background(o.async_release);
  return b;
}

}  // namespace sqlock::mysql
