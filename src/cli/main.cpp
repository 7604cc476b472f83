// sqlock: run a command under a distributed lock, list and release locks, migrate schemas,
// benchmark a backend, serve the admin page. See docs/cli.md.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "sqlock/random.hpp"
#include "sqlock/url.hpp"

using namespace sqlock;
using namespace sqlock::cli;

namespace {

const CLI::Validator nonempty(
    [](const std::string& v) { return v.empty() ? std::string("must not be empty") : ""; }, "",
    "NONEMPTY");

const char* const url_help =
    "lock store URL (default: $SQLOCK_URL, else sqlite: in $XDG_STATE_HOME/sqlock)";

void add_url(CLI::App* sub, std::string& url) {
  sub->add_option("-u,--url", url, url_help);
}

// The exit codes every subcommand that opens the store shares (the end of each footer).
const std::string store_exits =
    "64 bad arguments or URL; 69 store unreachable; 73 the server is read-only (a hot standby or "
    "read-only replica); 77 access refused by the store; 78 sqlock schema missing or outdated "
    "(run `sqlock migrate`).";
// Those of the subcommands that wait for a lock.
const std::string wait_exits =
    "70 lease lost; 75 not obtained within --wait (or -E N); 128+N signal N stopped the wait; ";

// The options `run`, `elect` and `hold` share: where, how long to wait, the lease, the mode.
void add_lock_options(CLI::App* sub, run_args& a, bool& nonblock) {
  add_url(sub, a.url);
  auto* wait_opt =
      sub->add_option(
             "-w,--wait", a.wait,
             "how long to wait for the lock (250ms, 30s, 5m); 0 = one try; default forever")
          ->check(nonempty);
  sub->add_flag("-n,--nonblock", nonblock, "one try, no waiting (= --wait 0)")->excludes(wait_opt);
  sub->add_option("-l,--lease", a.lease, "lease, renewed while held (at least 500ms)")
      ->capture_default_str();
  sub->add_option("--mode", a.mode, "backend mode: pessimistic, optimistic, advisory")
      ->check(nonempty);
  sub->add_option("-E,--conflict-exit-code", a.conflict_exit,
                  "exit code when the lock is not obtained within --wait")
      ->capture_default_str()
      ->check(CLI::Range(0, 255));
  auto* verbose = sub->add_flag("-v,--verbose", a.verbose, "lock events on stderr");
  sub->add_flag("-q,--quiet", a.quiet, "no messages of sqlock's own (the exit code tells)")
      ->excludes(verbose);
}

int release_command(const std::string& url_text, const std::string& name, bool force,
                    const std::string& actor) {
  if (!force) {
    std::cerr << "sqlock: release needs --force (it releases whoever holds the lock)\n";
    return usage;
  }
  auto c = connect(resolve_url(url_text));
  if (c.force_release(name, actor.empty() ? default_actor() : actor)) {
    std::cout << "released " << name << "\n";
    return ok;
  }
  std::cout << "not held: " << name << "\n";
  return 1;
}

int migrate_command(const std::string& url_text, bool print) {
  register_builtin_backends();
  auto b = make_backend(resolve_url(url_text));
  auto* schema = b->schema();
  if (!schema) {
    std::cout << b->kind() << " keeps no schema: nothing to migrate\n";
    return ok;
  }
  if (print) {
    std::cout << schema->migration_script();
    return ok;
  }
  int v = schema->migrate();
  if (v == 0)  // a peer's layout (compat=): its table, no versions
    std::cout << "table of " << b->describe() << " is in place\n";
  else
    std::cout << "schema of " << b->describe() << " is at version " << v << "\n";
  return ok;
}

// Edit distance of two short words (insertions, deletions, substitutions, swaps of neighbours).
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The subcommands, in the order --help lists them.
constexpr std::array<std::string_view, 10> subcommands{
    "run", "elect", "leader", "hold", "list", "release", "migrate", "doctor", "bench", "serve"};

// `sqlock WORD` where WORD names no subcommand: says so, with the nearest one when it is close.
bool unknown_subcommand(const std::string& word) {
  if (word.empty() || word[0] == '-') return false;
  std::string best;
  std::size_t best_d = word.size();
  for (auto name : subcommands) {
    if (name == word) return false;
    auto d = distance(word, std::string(name));
    if (d < best_d) best_d = d, best = name;
  }
  std::cerr << "sqlock: '" << word << "' is not a sqlock command";
  if (!best.empty() && best_d <= 2) std::cerr << "; did you mean '" << best << "'?";
  std::cerr << "\nRun with --help for the commands.\n";
  return true;
}

// Whether the parser took NAME from after a `--` (`sqlock run -- echo hi`): the arguments hold
// more `--` words than CMD kept (a `--` after NAME stays in CMD; one before NAME is consumed).
bool name_after_dashes(int argc, char** argv, const std::vector<std::string>& command) {
  auto given = std::count_if(argv + 1, argv + argc,
                             [](const char* w) { return w == std::string_view("--"); });
  return given > std::count(command.begin(), command.end(), std::string("--"));
}

// `--version`: the program's version and the backends it can open.
std::string version_text() {
  std::string v = "sqlock " SQLOCK_VERSION "\nbackends:";  // the project() version
  try {
    for (const auto& scheme : registered_schemes()) v += " " + scheme;
  } catch (const std::exception& e) {
    v += std::string(" (not listed: ") + e.what() + ")";
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && unknown_subcommand(argv[1])) return usage;
  // `sqlock SUB ...` builds the parser of SUB alone: constructing all of them costs a command
  // run under a lock (`sqlock run`) a measurable part of its start. Anything else (`--help`,
  // `--version`, a misplaced option) gets all of them.
  // Past unknown_subcommand(), a first word that is not an option names a subcommand.
  const std::string_view only =
      argc > 1 && argv[1][0] != '\0' && argv[1][0] != '-' ? argv[1] : std::string_view();
  auto wanted = [only](std::string_view sub) { return only.empty() || only == sub; };
  CLI::App app{"sqlock: distributed locks whose home is the database"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text, "print the version and the backends it can open");
  // Parse errors echo what was typed, a URL with its password too: masked like every message.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return shown(CLI::FailureMessage::simple(a, e));
  });
  app.footer(
      "Exit: 0 done; 1 nothing to show or do (leader: nobody leads; release: not held); run and\n"
      "elect: CMD's status; " +
      wait_exits + "\n" + store_exits + "\nEach subcommand's --help lists its own.");

  run_args ra, ha;
  bool ra_nonblock = false, ha_nonblock = false;
  CLI::App* run = nullptr;
  if (wanted("run")) {
    run = app.add_subcommand("run",
                             "run a command while holding a lock (like flock across machines)");
    add_lock_options(run, ra, ra_nonblock);
    run->footer(
        "Exit: CMD's status (128+N: CMD killed by signal N); 126 CMD not executable; 127 "
        "CMD not found; " +
        wait_exits + "\n" + store_exits);
    // After NAME, everything is CMD: `--` is only needed for a leading dash.
    run->positionals_at_end();
    run->add_option(
           "--kill-after", ra.kill_after,
           "on a lost lease: SIGTERM to the command's process group, SIGKILL this much later")
        ->capture_default_str();
    auto* shell_opt =
        run->add_option("-c,--command", ra.shell_command, "command string, run through sh -c")
            ->check(nonempty);
    auto* shared_opt = run->add_flag("--shared", ra.shared,
                                     "a shared hold: many at once, none while an exclusive one is "
                                     "held or waited for");
    auto* permits_opt =
        run->add_option("--permits", ra.permits,
                        "one of N permits of the name (every user gives the same N)")
            ->check(CLI::Range(1u, 1000000u))
            ->excludes(shared_opt);
    run->add_option("--at-least", ra.at_least,
                    "keep the lock this long after acquiring even if CMD ends sooner (the rest "
                    "of it stays in the store as a shortened lease)")
        ->check(nonempty)
        ->excludes(shared_opt)
        ->excludes(permits_opt);
    run->add_option("--at-most", ra.at_most,
                    "the lease, never renewed: CMD is stopped as on a lost lease when it ends "
                    "(exit 70)")
        ->check(nonempty)
        ->excludes(shared_opt)
        ->excludes(permits_opt);
    run->add_option("--holder", ra.holder,
                    "the hold's description in the store (default: HOST:PID:CMD ARGS)");
    run->add_option("name", ra.name, "lock name")->required();
    run->add_option("command", ra.command, "command and arguments (after --)")->excludes(shell_opt);
  }

  run_args ea;
  bool ea_nonblock = false;
  CLI::App* elect = nullptr;
  if (wanted("elect")) {
    elect = app.add_subcommand("elect",
                               "campaign for leadership of NAME and run a command while leading");
    add_lock_options(elect, ea, ea_nonblock);
    elect->footer(
        "Exit: CMD's status (128+N: CMD killed by signal N); 126 CMD not executable; "
        "127 CMD not found; " +
        wait_exits + "\n" + store_exits);
    elect->positionals_at_end();
    elect
        ->add_option("--kill-after", ea.kill_after,
                     "on lost leadership: SIGTERM to the command's group, SIGKILL this much later")
        ->capture_default_str();
    elect->add_option("--value", ea.value, "what `sqlock leader` shows (an address, a host name)")
        ->required()
        ->check(nonempty);
    auto* elect_shell =
        elect->add_option("-c,--command", ea.shell_command, "command string, run through sh -c")
            ->check(nonempty);
    elect->add_option("name", ea.name, "election name")->required();
    elect->add_option("command", ea.command, "command and arguments (after --)")
        ->excludes(elect_shell);
  }

  std::string leader_url, leader_name;
  bool leader_json = false;
  CLI::App* leader = nullptr;
  if (wanted("leader")) {
    leader = app.add_subcommand("leader", "print the leader's value and term (two lines)");
    add_url(leader, leader_url);
    leader->footer("Exit: 0 someone leads; 1 nobody leads; " + store_exits);
    leader->add_flag("--json", leader_json, "one JSON object (null when nobody leads)");
    leader->add_option("name", leader_name, "election name")->required();
  }

  CLI::App* hold = nullptr;
  if (wanted("hold")) {
    hold = app.add_subcommand(
        "hold", "take a lock, print its fence, hold it until SIGINT/SIGTERM (exit 0) or loss (70)");
    add_lock_options(hold, ha, ha_nonblock);
    hold->add_option("--holder", ha.holder,
                     "the hold's description in the store (default: HOST:PID:sqlock hold)");
    hold->footer("Exit: 0 released after SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 or SIGUSR2; " +
                 wait_exits + "\n" + store_exits);
    hold->add_option("name", ha.name, "lock name")->required();
  }

  std::string list_url, list_prefix;
  bool list_json = false, list_waiting = false;
  CLI::App* list = nullptr;
  if (wanted("list")) {
    list = app.add_subcommand("list", "list held locks");
    add_url(list, list_url);
    list->footer("Exit: 0; " + store_exits);
    list->add_option("--prefix", list_prefix, "only names starting with this");
    list->add_flag("--json", list_json, "one JSON array");
    list->add_flag("--waiting", list_waiting,
                   "the requests waiting for locks instead (ZooKeeper, etcd: in queue order; "
                   "PostgreSQL, MySQL)");
  }

  std::string rel_url, rel_name, rel_actor;
  bool rel_force = false;
  CLI::App* rel = nullptr;
  if (wanted("release")) {
    rel = app.add_subcommand("release", "release a lock whoever holds it");
    rel->add_flag("--force", rel_force, "required: this overrides the holder");
    rel->add_option("--actor", rel_actor,
                    "who forces it, for the store's audit trail (default: $USER@hostname)")
        ->check(nonempty);
    add_url(rel, rel_url);
    rel->footer("Exit: 0 released; 1 not held; " + store_exits + " 64 also without --force.");
    rel->add_option("name", rel_name, "lock name")->required();
  }

  std::string mig_url;
  bool mig_print = false;
  CLI::App* mig = nullptr;
  if (wanted("migrate")) {
    mig = app.add_subcommand("migrate", "apply (or print) the schema migrations and routines");
    add_url(mig, mig_url);
    mig->footer("Exit: 0 migrated (or nothing to migrate); " + store_exits);
    mig->add_flag("--print", mig_print, "print the SQL instead of applying it");
  }

  std::string doc_url, doc_patroni;
  bool doc_json = false;
  CLI::App* doc = nullptr;
  if (wanted("doctor")) {
    doc = app.add_subcommand(
        "doctor",
        "check the store behind a URL: what it is and whether the URL's mode is safe there");
    doc->add_option("url", doc_url, url_help);
    doc->add_flag("--json", doc_json, "one JSON object");
    doc->add_option("--patroni", doc_patroni,
                    "Patroni's REST API (http://HOST:8008): the cluster's members, roles, lag, "
                    "synchronous mode, and whether the URL lists every member");
    doc->footer("Exit: 0 the URL's mode is safe there; 1 a finding is unsafe or an error; " +
                store_exits);
  }

  bench_args ba;
  CLI::App* bench = nullptr;
  if (wanted("bench")) {
    bench = app.add_subcommand("bench", "measure lock/unlock pairs per second and latency");
    add_url(bench, ba.url);
    bench->footer("Exit: 0; " + store_exits);
    bench->add_option("--mode", ba.mode, "backend mode");
    bench->add_option("--threads", ba.threads, "threads, each with its own client")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    bench->add_option("--locks", ba.locks, "distinct lock names (per thread unless --contended)")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000000));
    bench->add_option("--duration", ba.duration, "how long to run")->capture_default_str();
    bench->add_option("--lease", ba.lease, "lease of each hold")->capture_default_str();
    bench->add_flag("--contended", ba.contended, "all threads share the same lock names");
    bench->add_flag("--one-client", ba.one_client,
                    "all threads share one client (and its connection budget)");
    bench->add_flag("--json", ba.json, "one JSON object on stdout");
    auto* bench_shared = bench->add_flag("--shared", ba.shared, "shared holds (readers)");
    bench->add_option("--permits", ba.permits, "permits of N-permit semaphores")
        ->check(CLI::Range(1u, 1000000u))
        ->excludes(bench_shared);
    bench->add_flag("--async", ba.async_api,
                    "each hold through the asynchronous API (acquire_future(...).get(), "
                    "hold::release()) instead of lock()/unlock()");
  }

  serve_args sa;
  CLI::App* serve = nullptr;
  if (wanted("serve")) {
    serve = app.add_subcommand("serve", "web admin page listing locks, with forced release");
    add_url(serve, sa.url);
    serve->footer(
        "Exit: 0 stopped by a signal; 64 bad arguments or --listen; 77 access refused "
        "by the store; 78 sqlock schema missing or outdated (run `sqlock migrate`).\n"
        "A store that does not answer is reported by /healthz (503), not by an exit.");
    serve
        ->add_option(
            "--listen", sa.listen,
            "ADDRESS:PORT to listen on (:PORT = 127.0.0.1; port 0 = any free port, the one "
            "taken is printed)")
        ->capture_default_str();
    serve->add_flag("--read-only", sa.read_only, "no release button");
    serve->add_option("--token-file", sa.token_file,
                      "file of admin tokens, one a line as NAME:SECRET (NAME is the actor "
                      "logged for a release) or a bare SECRET named admin (default: "
                      "$SQLOCK_ADMIN_TOKEN); without one nothing can be released");
    serve
        ->add_option(
            "--allow-host", sa.allow_hosts,
            "a Host name (NAME or NAME:PORT) served besides the listen address; repeatable")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    serve->add_flag("--private", sa.private_reads,
                    "reading the locks and /metrics needs the token");
    serve
        ->add_option("--retry-every", sa.retry_every,
                     "while the store does not answer: pause between connection attempts "
                     "(serve runs meanwhile; /healthz answers 503)")
        ->capture_default_str();
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return usage;
  }

  // `sqlock run -- CMD` without NAME: the parser would take CMD's first word for NAME.
  for (auto [sub, a] : {std::pair{run, &ra}, std::pair{elect, &ea}})
    if (sub && *sub && name_after_dashes(argc, argv, a->command)) {
      std::cerr << "sqlock: " << sub->get_name() << " needs NAME before --: sqlock "
                << sub->get_name() << " [OPTIONS] NAME -- CMD [ARGS...]\n";
      return usage;
    }
  // After NAME the parser keeps everything, `--` too: it only marks where CMD begins.
  for (auto* a : {&ra, &ea})
    if (!a->command.empty() && a->command.front() == "--") a->command.erase(a->command.begin());
  if (ra_nonblock) ra.wait = "0";
  if (ea_nonblock) ea.wait = "0";
  if (ha_nonblock) ha.wait = "0";
  if (run && *run) return guarded([&] { return run_command(ra); });
  if (hold && *hold) return guarded([&] { return hold_command(ha); });
  if (elect && *elect) return guarded([&] { return elect_command(ea); });
  if (leader && *leader)
    return guarded([&] { return leader_command(leader_url, leader_name, leader_json); });
  if (list && *list)
    return guarded([&] { return list_command(list_url, list_prefix, list_json, list_waiting); });
  if (rel && *rel)
    return guarded([&] { return release_command(rel_url, rel_name, rel_force, rel_actor); });
  if (mig && *mig) return guarded([&] { return migrate_command(mig_url, mig_print); });
  if (doc && *doc) return guarded([&] { return doctor_command(doc_url, doc_patroni, doc_json); });
  if (bench && *bench) return guarded([&] { return bench_command(ba); });
  if (serve && *serve) return guarded([&] { return serve_command(sa); });
  return usage;
}
