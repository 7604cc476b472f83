// Pieces shared by the sqlock subcommands: exit codes, URL defaults, error-to-exit mapping, the
// store's times as time points.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"
#include "sqlock/doctor.hpp"

namespace sqlock::cli {

/// Exit codes (sysexits.h where one fits); fixed by the CLI contract.
enum exit_code : int {
  ok = 0,
  unsafe_store = 1,  ///< `doctor`: a finding is unsafe or an error
  usage = 64,        ///< bad arguments or URL
  unavailable = 69,  ///< backend unreachable
  software = 70,     ///< lease lost while the command ran
  tempfail = 75,     ///< lock not obtained within --wait
  noperm = 77,       ///< the store refused the credentials or permissions
  read_only = 73,    ///< the server is a hot standby or read-only: the URL has to reach the
                     ///< primary (sysexits EX_CANTCREAT: the store cannot take the write)
  no_schema = 78,    ///< the store's sqlock schema is missing or outdated (sysexits EX_CONFIG)
};

/// `text` with every password in it masked (sqlock::redact_secrets): every message goes
/// through this before it is printed or served.
std::string shown(std::string_view text);

/// --url if given, else $SQLOCK_URL, else sqlite: at the default state path.
std::string resolve_url(const std::string& given);

/// Sets (or replaces) the `mode` query parameter of `url` when `mode` is non-empty.
std::string with_mode(const std::string& url, const std::string& mode);

/// Runs `fn`, mapping sqlock errors to a message on stderr and the contract's exit codes.
int guarded(const std::function<int()>& fn);

/// Subcommands.
struct run_args {
  std::string url, wait, lease = "30s", mode, name;
  std::string kill_after = "10s";  ///< grace between SIGTERM and SIGKILL to CMD's group on loss
  std::string shell_command;       ///< -c: run through `sh -c` instead of `command`
  int conflict_exit = tempfail;    ///< exit code when the lock is not obtained within --wait
  bool verbose = false;            ///< -v: acquire/renew/release events on stderr
  bool quiet = false;              ///< -q: none of sqlock's own messages on stderr
  bool shared = false;             ///< --shared: a shared hold
  unsigned permits = 0;            ///< --permits N: one of N permits; 0 = exclusive
  std::string at_least, at_most;   ///< --at-least / --at-most ("" = not given)
  std::string value;               ///< `elect --value`: the campaign value
  std::string holder;              ///< --holder: the hold's description ("" = host:pid:CMD)
  std::vector<std::string> command;
};
int run_command(const run_args& a);
/// `sqlock elect NAME --value V -- CMD`: CMD runs while this process leads (exit 70 on loss).
int elect_command(const run_args& a);
/// `sqlock leader NAME`: prints the leader's value and term (exit 1 when nobody leads).
int leader_command(const std::string& url, const std::string& name, bool json);
/// `sqlock hold NAME`: prints the fence, holds until a signal (exit 0) or a loss (exit 70).
int hold_command(const run_args& a);

struct bench_args {
  std::string url, mode, duration = "5s", lease = "30s";
  int threads = 1, locks = 1;
  bool contended = false, json = false;
  bool one_client = false;  ///< --one-client: every thread on one client (its connection budget)
  bool shared = false;      ///< --shared: shared holds instead of exclusive ones
  unsigned permits = 0;     ///< --permits N: permits of N-permit semaphores; 0 = exclusive
  bool async_api = false;   ///< --async: each hold through the asynchronous API's future form
};
int bench_command(const bench_args& a);

struct serve_args {
  std::string url, listen = "127.0.0.1:8480";
  bool read_only = false;
  std::string token_file;                ///< "" = $SQLOCK_ADMIN_TOKEN (none: no changes)
  std::vector<std::string> allow_hosts;  ///< Host names served besides the listen address
  bool private_reads = false;            ///< reads need the token too
  std::string retry_every = "2s";        ///< pause between connection attempts while down
};
int serve_command(const serve_args& a);

using wall_time = std::chrono::system_clock::time_point;

/// "2024-05-01T12:00:00.250Z" (as list() gives) as a time point; empty when malformed.
std::optional<wall_time> parse_utc(const std::string& iso);

/// "2026-11-23T11:40:02Z": the store's time to the second (its own text when it is not a
/// time, "-" when empty).
std::string utc_text(const std::string& iso);

/// A duration as sqlock's options take it: "2s", "250ms", "1500ms".
std::string duration_text(milliseconds d);

/// Who holds `name` as the store lists it: "HOLDER since TIME" (", and N more" for shared
/// holds and permits); "" when it cannot be told (not held any more, no list()).
std::string holders_of(const client& c, const std::string& name);

/// `sqlock list`: held locks (or, with `waiting`, the requests waiting for them) as an aligned
/// table or (`json`) one JSON array.
int list_command(const std::string& url, const std::string& prefix, bool json, bool waiting);

/// `sqlock doctor`: the findings of the URL's store, one per line or (`json`) one JSON object;
/// exit 0 when the URL's mode is safe there, 1 when a finding is unsafe or an error. With
/// `patroni_rest` (Patroni's REST API, "http://host:8008"), the Patroni cluster too.
int doctor_command(const std::string& url, const std::string& patroni_rest, bool json);

/// The finding "patroni" of the cluster whose REST API is `rest_url`, for a client of
/// `store_url`: members, roles, lag and synchronous mode; warn when the URL does not list a
/// member (a failover to it cannot be followed) or no standby is synchronous, unsafe without
/// one leader; error when the API cannot be read by `deadline`. In the HTTP module.
std::vector<finding> patroni_findings(const std::string& rest_url, const std::string& store_url,
                                      steady_time deadline);

/// patroni_findings() through the HTTP module, loaded on this first use.
std::vector<finding> patroni_check(const std::string& rest_url, const std::string& store_url,
                                   steady_time deadline);

/// Status rows as the JSON objects `list --json` and the web page use.
std::string status_json(const std::vector<lock_status>& rows, int indent);

/// Waiting requests as the JSON objects `list --waiting --json` and the web page use (name,
/// owner, holder, kind, permits, since, position: null when the store keeps no order).
std::string waiting_json(const std::vector<waiting_request>& rows, int indent);

}  // namespace sqlock::cli
