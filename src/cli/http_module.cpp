// The sqlock command's calls into the HTTP module (libsqlock-cli-serve.so: serve_module.cpp),
// loaded on demand from LIBDIR/sqlock next to the command (bin/../LIBDIR, the same in the
// build tree), so that only `sqlock serve` and `sqlock doctor --patroni` load the HTTP library.
#include <dlfcn.h>

#include <filesystem>

#include "common.hpp"
#include "sqlock/errors.hpp"

#ifndef SQLOCK_CLI_SERVE_MODULE
#error "SQLOCK_CLI_SERVE_MODULE (the module's path relative to the command) must be defined"
#endif

namespace sqlock::cli {
namespace {

// The module's entry point `symbol` (the module is loaded once; never unloaded).
void* module_entry(const char* what, const char* symbol) {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  auto path = (exe.parent_path() / SQLOCK_CLI_SERVE_MODULE).lexically_normal();
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    throw config_error(std::string(what) + ": cannot load " + path.string() + ": " + (e ? e : "?"));
  }
  void* entry = ::dlsym(h, symbol);
  if (!entry) throw config_error(std::string(what) + ": " + path.string() + " has no " + symbol);
  return entry;
}

}  // namespace

int serve_command(const serve_args& a) {
  auto* entry = reinterpret_cast<int (*)(const serve_args*)>(
      module_entry("sqlock serve", "sqlock_cli_serve_v1"));
  return entry(&a);
}

std::vector<finding> patroni_check(const std::string& rest_url, const std::string& store_url,
                                   steady_time deadline) {
  auto* entry = reinterpret_cast<void (*)(const std::string*, const std::string*,
                                          const steady_time*, std::vector<finding>*)>(
      module_entry("sqlock doctor --patroni", "sqlock_cli_patroni_v1"));
  std::vector<finding> out;
  entry(&rest_url, &store_url, &deadline, &out);
  return out;
}

}  // namespace sqlock::cli
