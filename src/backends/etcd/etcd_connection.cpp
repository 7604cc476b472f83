#include "etcd_connection.hpp"

#include <openssl/evp.h>

#include <charconv>
#include <cstdint>
#include <thread>

#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"

namespace sqlock::etcd::detail {

namespace {

using clock = std::chrono::steady_clock;

// While some member said "no leader" (an election in progress), every member is tried again
// after a jittered pause doubling from the first to the cap, for up to one request's timeout.
constexpr auto no_leader_pause_first = std::chrono::milliseconds(20);
constexpr auto no_leader_pause_cap = std::chrono::milliseconds(500);

// With more than one member, one member's attempt lasts at most the request timeout / 5 (and
// not under this floor): a member that accepts connections but does not answer — a restarted
// etcd 3.4 member serves nothing until it has published itself through raft, which a lost
// publish puts off by 6 s — is left for the next one instead of holding the call until its
// deadline (a waiter's keep-alive thus outlived its lease: chaos.etcd.cluster, a takeover 6 s
// after a majority outage). With one member there is nothing to move to: its attempt may take
// the whole deadline.
constexpr auto member_attempt_floor = std::chrono::milliseconds(500);

}  // namespace

std::string where(const endpoint& e) {
  return e.host + ":" + std::to_string(e.port);
}

std::string b64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string unb64(std::string_view text) {
  if (text.size() % 4 != 0) throw backend_error("etcd sent malformed base64");
  std::string out(3 * text.size() / 4, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) throw backend_error("etcd sent malformed base64");
  std::size_t pad = 0;
  if (!text.empty() && text.back() == '=') ++pad;
  if (text.size() > 1 && text[text.size() - 2] == '=') ++pad;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

std::string prefix_end(std::string p) {
  while (!p.empty()) {
    auto c = static_cast<unsigned char>(p.back());
    if (c < 0xFF) {
      p.back() = static_cast<char>(c + 1);
      return p;
    }
    p.pop_back();
  }
  return std::string(1, '\0');  // every key
}

std::int64_t num(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0;
  const auto bad = [&] {
    return backend_error(std::string("etcd sent a bad number in '") + key + "'");
  };
  // Not a float (its conversion may overflow) nor an unsigned beyond int64.
  if (it->is_number_unsigned() && it->get<std::uint64_t>() > INT64_MAX) throw bad();
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (!it->is_string()) throw bad();
  const auto& s = it->get_ref<const std::string&>();
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) throw bad();
  return v;
}

gateway::gateway(const options& o) : opts_(o), wire_(make_transport(o)) {}

gateway::~gateway() = default;

json gateway::call(std::string_view path, const json& body, steady_time deadline) {
  const std::size_t n = opts_.endpoints.size();
  const std::size_t first = preferred_.load();
  bool refreshed = false;
  bool leaderless = false;  // a member had no leader in this round
  const auto began = clock::now();
  std::exception_ptr last;
  unsigned round = 0;  // pauses so far
  for (std::size_t i = 0; clock::now() < deadline;) {
    if (i == n) {
      // Every member tried: when one of them had no leader, the cluster may be electing one;
      // for at most one request's timeout (as etcd itself would wait), then the caller decides.
      if (!leaderless || clock::now() >= began + opts_.timeout) break;
      const auto pause = backoff_delay(round++, no_leader_pause_first, no_leader_pause_cap);
      std::this_thread::sleep_until(
          std::min({deadline, began + opts_.timeout, clock::now() + pause}));
      i = 0;
      leaderless = false;
      continue;
    }
    std::size_t idx = (first + i) % n;
    const auto attempt_end = member_attempt_end(deadline);
    try {
      auto r = wire_->call(idx, path, body, current_token(deadline), attempt_end);
      preferred_ = idx;
      return r;
    } catch (const etcd_error& e) {
      if (e.grpc_code() == grpc_unauthenticated && !opts_.user.empty() && !refreshed) {
        refreshed = true;  // the token expired: authenticate again, once
        token(deadline, true);
        continue;
      }
      if (e.grpc_code() != grpc_unavailable && e.grpc_code() != grpc_canceled) throw;
      // No leader, or the member is stopping: the next member. Should none serve it, this is
      // the cluster out of reach for now (a connection_error: retried within the deadline),
      // not an answer.
      last = std::make_exception_ptr(connection_error(e.what()));
      leaderless = true;
    } catch (const connection_error&) {
      last = std::current_exception();
    }
    ++i;
  }
  if (last) std::rethrow_exception(last);
  throw connection_error("etcd: no member answered " + std::string(path) + " in time");
}

steady_time gateway::member_attempt_end(steady_time deadline) const {
  if (opts_.endpoints.size() == 1) return deadline;
  return std::min(deadline, clock::now() + std::max<std::chrono::milliseconds>(member_attempt_floor,
                                                                               opts_.timeout / 5));
}

std::string gateway::token(steady_time deadline, bool refresh) {
  std::lock_guard g(token_m_);
  if (!token_.empty() && !refresh) return token_;
  json body = {{"name", opts_.user}, {"password", opts_.password}};
  std::exception_ptr last;
  for (std::size_t idx = 0; idx < opts_.endpoints.size(); ++idx) {
    try {
      auto r = wire_->call(idx, "auth/authenticate", body, "", deadline);
      token_ = r.value("token", "");
      return token_;
    } catch (const etcd_error& e) {
      if (e.grpc_code() == grpc_unavailable) {
        last = std::current_exception();
        continue;
      }
      if (e.grpc_code() == grpc_invalid_argument || e.grpc_code() == grpc_unauthenticated ||
          e.grpc_code() == grpc_failed_precondition /* authentication is not enabled */)
        throw auth_error("etcd authentication of user '" + opts_.user + "' failed: " + e.what());
      throw;
    } catch (const connection_error&) {
      last = std::current_exception();
    }
  }
  if (last) std::rethrow_exception(last);
  throw connection_error("etcd: no member to authenticate with");
}

std::string gateway::current_token(steady_time deadline) {
  return opts_.user.empty() ? std::string() : token(deadline, false);
}

std::unique_ptr<stream> gateway::open_stream(std::string_view path, const json& body,
                                             std::function<void(const json&)> on_message,
                                             std::function<void()> on_end, steady_time deadline) {
  return wire_->open_stream(preferred_.load(), path, body, current_token(deadline),
                            std::move(on_message), std::move(on_end), deadline);
}

void gateway::prefer_next_member() {
  const std::size_t n = opts_.endpoints.size();
  std::size_t p = preferred_.load();
  preferred_.compare_exchange_strong(p, (p + 1) % n);
}

}  // namespace sqlock::etcd::detail
