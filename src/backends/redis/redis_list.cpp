// list() on one Redis server (see redis_list.hpp).
#include "redis_list.hpp"

#include <nlohmann/json.hpp>

#include "redis_lua.hpp"
#include "redis_names.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/redis/redis.hpp"
#include "sqlock/url.hpp"  // format_utc_ms

namespace sqlock::redis::detail {

namespace {

// "" for a time the server did not give (<= 0).
std::string iso8601(long long ms) {
  return ms <= 0 ? std::string() : format_utc_ms(ms);
}

void add_exclusive(reply_view row, const std::string& name, const std::string& mode,
                   std::vector<lock_status>& out) {
  std::string owner = row.at(0).str();
  if (owner.empty()) return;  // released meanwhile
  long long pttl = row.at(1).integer("inspect");
  long long now = row.at(5).integer("inspect");
  lock_status held;
  held.name = name;
  held.owner = owner;
  held.fence = static_cast<std::uint64_t>(row.at(2).integer("inspect"));
  held.holder = row.at(3).str();
  held.acquired_at = iso8601(row.at(4).integer("inspect"));
  held.expires_at = pttl >= 0 ? iso8601(now + pttl) : std::string();
  held.mode = mode;
  out.push_back(std::move(held));
}

void add_holders(reply_view rows, const std::string& name, const std::string& mode,
                 std::vector<lock_status>& out) {
  const auto n = rows.size("inspect_holders");
  if (n < 3) throw backend_error("Redis inspect_holders: unexpected reply");
  const auto kind = rows.at(1).str() == "permit" ? lock_kind::permit : lock_kind::shared;
  const auto permits = std::stoul("0" + rows.at(2).str());
  for (std::size_t i = 3; i + 2 < n; i += 3) {
    lock_status held;
    held.name = name;
    held.owner = rows.at(i).str();
    held.expires_at = iso8601(std::stoll(rows.at(i + 1).str()));
    auto info = nlohmann::json::parse(rows.at(i + 2).str(), nullptr, false);
    if (info.is_object()) {
      held.fence = info.value("fence", std::uint64_t{0});
      held.holder = info.value("holder", std::string());
      held.acquired_at = iso8601(info.value("acquired", 0LL));
    }
    held.mode = mode;
    held.kind = kind;
    held.permits = kind == lock_kind::permit ? static_cast<std::uint32_t>(permits) : 0;
    out.push_back(std::move(held));
  }
}

}  // namespace

std::vector<lock_status> list_node(node& nd, const std::string& key_prefix,
                                   std::string_view name_prefix, const std::string& mode,
                                   steady_time deadline) {
  const auto& inspect = lua::get("inspect");
  const auto& inspect_holders = lua::get("inspect_holders");
  const std::string head = key_prefix + ":{";
  const std::string pattern = head + encode_name(name_prefix) + "*}:*";
  std::vector<lock_status> out;
  auto conn = nd.take(deadline);
  std::string cursor = "0";
  do {
    auto r = conn->command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    reply_view v{r.get()};
    if (v.is_error()) throw_reply_error(*r, "Redis SCAN");
    cursor = v.at(0).str();
    auto keys = v.at(1);
    std::vector<found> locks;
    std::vector<std::vector<std::string>> lock_keys;
    for (std::size_t i = 0; i < keys.size("SCAN"); ++i) {
      auto f = lock_of(keys.at(i).str(), head);
      if (!f) continue;
      lock_keys.push_back(f->exclusive ? std::vector<std::string>{owner_key(key_prefix, f->name),
                                                                  fence_key(key_prefix, f->name),
                                                                  info_key(key_prefix, f->name)}
                                       : std::vector<std::string>{holders_key(key_prefix, f->name),
                                                                  hinfo_key(key_prefix, f->name),
                                                                  meta_key(key_prefix, f->name)});
      conn->append(
          script_argv(f->exclusive ? inspect : inspect_holders, false, lock_keys.back(), {}));
      locks.push_back(std::move(*f));
    }
    if (locks.empty()) continue;
    conn->flush();
    std::vector<reply_ptr> replies;
    for (std::size_t i = 0; i < locks.size(); ++i) replies.push_back(conn->read());
    for (std::size_t i = 0; i < locks.size(); ++i) {
      const auto& s = locks[i].exclusive ? inspect : inspect_holders;
      if (is_noscript(replies[i].get())) replies[i] = conn->eval(s, lock_keys[i], {});
      reply_view row{replies[i].get()};
      if (row.is_error()) throw_reply_error(*replies[i], "Redis " + std::string(s.name));
      if (locks[i].exclusive)
        add_exclusive(row, locks[i].name, mode, out);
      else
        add_holders(row, locks[i].name, mode, out);
    }
  } while (cursor != "0");
  nd.give(std::move(conn));
  return out;
}

}  // namespace sqlock::redis::detail
