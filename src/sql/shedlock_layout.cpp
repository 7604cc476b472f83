// compat=shedlock: the rules of ShedLock's table, once, over each database's expressions (see
// shedlock_layout.hpp).
#include "shedlock_layout.hpp"

namespace sqlock::sql {

namespace {

operation op(std::string key, std::vector<std::string> statements) {
  return {"shedlock_" + std::move(key), std::move(statements)};
}

}  // namespace

dialect shedlock_dialect(const shedlock_sql& db, const std::string& table) {
  check_table_name(table, "shedlock_table");
  const std::string& t = table;
  const std::string& now = db.now;
  const std::string mine = db.owned_by("locked_by");
  const std::string held_by_me = "lock_until > " + now + " AND " + mine;
  dialect d;
  d.kind = db.kind;
  d.mode = "shedlock";
  const std::string set =
      "lock_until = " + db.lease_end + ", locked_at = " + now + ", locked_by = " + db.locked_by;
  const std::string insert = "INTO " + t +
                             "(name, lock_until, locked_at, locked_by) VALUES(:name, " +
                             db.lease_end + ", " + now + ", " + db.locked_by + ")";
  if (db.on_duplicate_name) {
    d.acquire = op("acquire", {"INSERT " + insert +
                               db.on_duplicate_name(set, t + ".lock_until <= " + now + " OR " +
                                                             db.owned_by(t + ".locked_by"))});
  } else {
    d.acquire = op("acquire", {db.insert_ignore + " " + insert,
                               "UPDATE " + t + " SET " + set + " WHERE name = :name AND (" +
                                   "lock_until <= " + now + " OR " + mine + ")",
                               "SELECT 0 FROM " + t + " WHERE name = :name AND " + held_by_me});
  }
  d.renew = op("renew", db.applied("UPDATE " + t + " SET lock_until = " + db.lease_end +
                                       " WHERE name = :name AND " + held_by_me,
                                   "SELECT 1 FROM " + t + " WHERE name = :name AND " + held_by_me));
  d.release = op("release", db.applied("UPDATE " + t + " SET lock_until = CASE WHEN locked_at > " +
                                           now + " THEN locked_at ELSE " + now +
                                           " END WHERE name = :name AND " + held_by_me,
                                       ""));
  d.list =
      op("list", {"SELECT name, " + db.owner_of_row + ", NULL, " + db.iso("locked_at") + ", " +
                  db.iso("lock_until") + ", 'shedlock', " + db.holder_of_row + " FROM " + t +
                  " WHERE lock_until > " + now + " AND " + db.name_has_prefix + " ORDER BY name"});
  d.force_release =
      op("force_release", db.applied("UPDATE " + t + " SET lock_until = " + now +
                                         " WHERE name = :name AND lock_until > " + now,
                                     ""));
  d.layout_table = t;
  d.layout_ddl = "CREATE TABLE IF NOT EXISTS " + t + db.columns + ";\n";
  d.layout_check = db.table_exists(t);
  d.max_name_chars = 64;  // ShedLock's name VARCHAR(64)
  return d;
}

}  // namespace sqlock::sql
