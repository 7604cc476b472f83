// The SQLite checks of `sqlock doctor`.
#include "sqlite_diagnostics.hpp"

#include <linux/magic.h>
#include <sys/statfs.h>

#include <filesystem>

namespace sqlock::sqlite::detail {

namespace {

using st = finding_status;

// File systems whose locks do not (reliably) reach other machines' processes.
const char* network_fs(long type) {
  switch (static_cast<unsigned long>(type)) {
    case NFS_SUPER_MAGIC:
      return "NFS";
    case SMB_SUPER_MAGIC:
    case 0xFF534D42UL:  // CIFS
    case 0xFE534D42UL:  // SMB2
      return "SMB/CIFS";
    case 0x65735546UL:  // FUSE (sshfs, cloud mounts)
      return "FUSE";
    default:
      return nullptr;
  }
}

}  // namespace

std::vector<finding> sqlite_diagnostics::check(steady_time deadline) {
  std::vector<finding> out;
  const auto bound = exchange_bound(deadline, engine_.io_timeout());
  out.push_back({"file", st::ok, "SQLite file " + path_ + " (one machine's processes)"});
  run_check(out, "journal", [&] {
    sql::rows r;
    engine_.with_connection([&](sql::connection& c) { r = c.query("PRAGMA journal_mode", bound); },
                            bound);
    const auto mode = r.empty() || r[0].empty() || !r[0][0] ? std::string("?") : *r[0][0];
    out.push_back({"journal", mode == "wal" ? st::ok : st::warn,
                   "journal_mode " + mode +
                       (mode == "wal" ? ": waiters wake on the WAL file's changes"
                                      : ": not WAL, waiters poll")});
  });
  run_check(out, "local", [&] {
    struct statfs fs {};
    const auto dir = std::filesystem::path(path_).parent_path();
    if (::statfs(dir.empty() ? "." : dir.c_str(), &fs) != 0) {
      out.push_back({"local", st::error, "cannot stat the file system of " + path_});
      return;
    }
    if (const char* net = network_fs(fs.f_type)) {
      out.push_back({"local", st::unsafe,
                     std::string("on a ") + net +
                         " file system: SQLite's locks do not exclude processes of other "
                         "machines there; use a database server"});
      return;
    }
    out.push_back(
        {"local", st::ok, "on a local file system: excludes the processes of this machine only"});
  });
  run_check(out, "schema", [&] {
    int version = 0;
    engine_.with_connection(
        [&](sql::connection& c) { version = sql::schema_version(c, engine_.get_dialect(), bound); },
        bound);
    out.push_back({"schema", st::ok,
                   "schema at version " + std::to_string(version) + " (created on first use)"});
  });
  return out;
}

}  // namespace sqlock::sqlite::detail
