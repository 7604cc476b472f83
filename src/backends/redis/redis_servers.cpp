// The servers of one Redis store and the pipelined round (see redis_servers.hpp).
#include "redis_servers.hpp"

#include <algorithm>
#include <map>

namespace sqlock::redis::detail {

std::string describe_failure(const std::exception_ptr& p) {
  if (!p) return "no error";
  try {
    std::rethrow_exception(p);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

servers::servers(const options& o) : redlock_(o.redlock) {
  s_.user = o.user;
  s_.password = o.password;
  s_.db = o.db;
  const milliseconds dflt = o.redlock ? milliseconds(250) : milliseconds(2000);
  s_.connect_timeout = o.connect_timeout.count() > 0 ? o.connect_timeout : dflt;
  s_.timeout = o.timeout.count() > 0 ? o.timeout : dflt;
  s_.pool = std::max<std::size_t>(o.pool, 1);
  for (const auto& a : o.nodes) nodes_.push_back(std::make_unique<node>(a, s_));
  quorum_ = redlock_ ? nodes_.size() / 2 + 1 : 1;
  addrs_ = o.nodes;
}

std::exception_ptr servers::reply_failure(const redisReply& r, const std::string& what) {
  try {
    throw_reply_error(r, "Redis " + what);
  } catch (...) {
    return std::current_exception();
  }
}

ones_tally servers::tally_ones(const std::vector<node_result>& res, const std::string& what) {
  std::size_t ones = 0;
  auto t = tally(res, what, [&](reply_view v) {
    if (v.integer(what) == 1) ++ones;
  });
  return {t.answered, ones, t.first_failure};
}

std::size_t servers::ones(const std::vector<node_result>& res, const std::string& what) {
  const auto t = tally_ones(res, what);
  if (t.answered == 0) std::rethrow_exception(t.first_failure);
  return t.ones;
}

connection_error servers::quorum_error(std::size_t answered,
                                       const std::exception_ptr& first_failure) const {
  return connection_error("Redlock: only " + std::to_string(answered) + " of " +
                          std::to_string(nodes_.size()) + " servers answered (need " +
                          std::to_string(quorum_) + "): " + describe_failure(first_failure));
}

std::vector<lock_status> servers::list(
    const std::function<std::vector<lock_status>(node&, steady_time)>& on_node) {
  // name -> owner -> merged row and how many servers have it
  std::map<std::string, std::map<std::string, std::pair<lock_status, std::size_t>>> seen;
  std::size_t reached = 0;
  std::exception_ptr first_failure;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    try {
      auto rows = on_node(*nodes_[i], admin_deadline());
      ++reached;
      for (auto& row : rows) {
        auto& [merged, count] = seen[row.name][row.owner];
        if (count == 0) {
          merged = row;
        } else {
          merged.fence = std::max(merged.fence, row.fence);
          merged.expires_at = std::min(merged.expires_at, row.expires_at);
        }
        ++count;
      }
    } catch (const std::exception&) {
      if (!first_failure) first_failure = std::current_exception();
    }
  }
  if (reached < quorum_) {
    if (!redlock_) std::rethrow_exception(first_failure);
    throw connection_error("Redlock list: only " + std::to_string(reached) + " of " +
                           std::to_string(nodes_.size()) + " servers answered");
  }
  std::vector<lock_status> out;
  for (auto& [name, owners] : seen)
    for (auto& [owner, mc] : owners)
      if (mc.second >= quorum_) out.push_back(std::move(mc.first));
  return out;
}

void servers::ping(steady_time deadline) {
  auto res = round_raw({"PING"}, exchange_bound(deadline, s_.timeout));
  const auto [ok, first_failure] = tally(res, "PING", [](reply_view) {});
  if (ok >= quorum_) return;
  if (!redlock_) std::rethrow_exception(first_failure);
  throw quorum_error(ok, first_failure);
}

std::string servers::describe() const {
  std::string d = redlock_ ? "redlock://" : "redis://";
  for (std::size_t i = 0; i < nodes_.size(); ++i) d += (i ? "," : "") + nodes_[i]->label();
  if (s_.db) d += "/" + std::to_string(s_.db);
  if (redlock_)
    d += " (" + std::to_string(nodes_.size()) + " masters, quorum " + std::to_string(quorum_) + ")";
  return d;
}

steady_time servers::admin_deadline() const {
  return std::chrono::steady_clock::now() + s_.timeout;
}

std::vector<node_result> servers::round(const lua::script& s, const std::vector<std::string>& keys,
                                        const std::vector<std::string>& args, steady_time deadline,
                                        std::string_view lock) {
  return round_argv(script_argv(s, false, keys, args), &s, deadline, lock);
}

std::vector<node_result> servers::round_raw(const std::vector<std::string>& argv,
                                            steady_time deadline) {
  return round_argv(argv, nullptr, deadline, {});
}

void servers::send_release(const lua::script& s, const std::vector<std::string>& keys,
                           const std::vector<std::string>& args, const std::string& lock,
                           steady_time deadline) {
  const auto now = std::chrono::steady_clock::now();
  // EVAL, not EVALSHA: a NOSCRIPT reply (script cache flushed, server restarted) would come only
  // after the same client's next acquire of the lock was already sent behind the release.
  owed_release o{lock, script_argv(s, true, keys, args), now, now + release_retry_window};
  for (auto& n : nodes_) {
    try {
      auto c = n->take(deadline);
      c->append(o.argv);
      c->flush();
      c->owe(o, n->book());
      n->give(std::move(c));
    } catch (const error&) {
      // Not written (no connection, or it broke): the flush sends it.
      n->book().owe(lock);
      n->book().unanswered({o});
    }
  }
  flusher_.poke();
}

void servers::retry(node& n, owed_release o) {
  bool ok = false;
  try {
    auto c = n.take(std::chrono::steady_clock::now() + s_.timeout);
    auto r = c->command(o.argv);
    ok = !reply_view{r.get()}.is_error();
    n.give(std::move(c));
  } catch (const error&) {
  }
  n.book().retried(std::move(o), ok);
}

bool servers::flush_step(steady_time now) {
  bool more = false;
  for (auto& n : nodes_) {
    n->collect(now - flush_after);
    for (auto& o : n->book().due(now)) retry(*n, std::move(o));
    if (!n->book().clear()) more = true;
  }
  return more;
}

std::vector<node_result> servers::round_argv(const std::vector<std::string>& sha_argv,
                                             const lua::script* s, steady_time deadline,
                                             std::string_view lock) {
  const std::size_t n = nodes_.size();
  std::vector<node_result> res(n);
  std::vector<bool> pending(n, true);
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<std::unique_ptr<connection>> conns(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (!pending[i]) continue;
      pending[i] = false;
      try {
        conns[i] = nodes_[i]->take(deadline, lock);
        conns[i]->append(sha_argv);
        conns[i]->flush();
      } catch (const error&) {
        res[i].failure = std::current_exception();
        if (conns[i] && conns[i]->reused && pass == 0) {
          nodes_[i]->drop_idle();
          pending[i] = true;
        }
        conns[i].reset();
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!conns[i]) continue;
      try {
        auto r = conns[i]->read();
        if (s && is_noscript(r.get())) {  // script cache flushed or server restarted
          auto full = sha_argv;
          full[0] = "EVAL";
          full[1] = std::string(s->text);
          r = conns[i]->command(full);
        }
        res[i].reply = std::move(r);
        res[i].failure = nullptr;
        nodes_[i]->give(std::move(conns[i]));
      } catch (const error&) {
        res[i].failure = std::current_exception();
        if (conns[i]->reused && pass == 0) {
          nodes_[i]->drop_idle();
          pending[i] = true;
        }
        conns[i].reset();
      }
    }
    if (std::none_of(pending.begin(), pending.end(), [](bool b) { return b; })) break;
  }
  return res;
}

}  // namespace sqlock::redis::detail
