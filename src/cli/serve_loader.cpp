// serve_command() in the sqlock command: loads the serve module (serve_module.cpp) from
// LIBDIR/sqlock next to the command (bin/../LIBDIR, the same in the build tree) and runs it,
// so that only `sqlock serve` loads the HTTP library.
#include <dlfcn.h>

#include <filesystem>

#include "common.hpp"
#include "sqlock/errors.hpp"

#ifndef SQLOCK_CLI_SERVE_MODULE
#error "SQLOCK_CLI_SERVE_MODULE (the module's path relative to the command) must be defined"
#endif

namespace sqlock::cli {

int serve_command(const serve_args& a) {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  auto path = (exe.parent_path() / SQLOCK_CLI_SERVE_MODULE).lexically_normal();
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    throw config_error("sqlock serve: cannot load " + path.string() + ": " + (e ? e : "?"));
  }
  auto* entry = reinterpret_cast<int (*)(const serve_args*)>(::dlsym(h, "sqlock_cli_serve_v1"));
  if (!entry) throw config_error("sqlock serve: " + path.string() + " has no entry point");
  return entry(&a);
}

}  // namespace sqlock::cli
