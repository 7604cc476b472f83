// How backends are found: factories registered per URL scheme, backends linked into the
// program, and backend modules (shared libraries) loaded by scheme. Part of the backend-author
// API; make_backend() and registered_schemes() are also what a program calls to list or build
// backends by URL.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sqlock/export.hpp"

namespace sqlock {

class backend;
class url;

/// Creates a backend from a parsed URL (see url.hpp). Registered per scheme.
using backend_factory = std::function<std::shared_ptr<backend>(const url&)>;

/// Registers a factory for a URL scheme ("sqlite", "postgresql", ...). Thread-safe.
SQLOCK_API void register_backend(const std::string& scheme, backend_factory factory);

/// Creates a backend for a URL through the registry; config_error for unknown schemes. A
/// scheme no backend linked into the program serves is looked up as a backend module:
/// libsqlock-backend-NAME.so in the directories of SQLOCK_BACKEND_PATH (colon-separated)
/// or, when unset, in LIBDIR/sqlock/backends of the installation, loaded once.
SQLOCK_API std::shared_ptr<backend> make_backend(const std::string& url_text);

/// Schemes registered so far and the schemes of the backend modules found, sorted.
SQLOCK_API std::vector<std::string> registered_schemes();

/// What a backend module's entry point is given: the program's register_backend().
using module_register_fn = void (*)(const std::string& scheme, backend_factory factory);

namespace detail {
/// Runs `register_all` (a backend's registration) and hands each scheme it registered to
/// `host`: the body of SQLOCK_BACKEND_MODULE's entry point. A module linked with its own copy
/// of the core registers into that copy first; `host` makes the schemes the program's.
SQLOCK_API void register_module(module_register_fn host, void (*register_all)());
/// Adds a backend linked into the program; `register_all` runs before the first lookup.
/// Called by each backend library's static initializer; returns true.
SQLOCK_API bool add_builtin(void (*register_all)());
}  // namespace detail

/// Defines the two functions a backend module exports, over `register_all` (a function
/// registering the module's schemes with register_backend()):
///   extern "C" void sqlock_backend_module_v1(sqlock::module_register_fn host);
///   extern "C" const char* sqlock_backend_module_version();  // SQLOCK_VERSION_STRING
/// The loader refuses a module whose version differs from the library's. The file using it
/// includes "sqlock/version.hpp" (the version the module is built with).
#define SQLOCK_BACKEND_MODULE(register_all)                                                \
  extern "C" SQLOCK_API void sqlock_backend_module_v1(::sqlock::module_register_fn host) { \
    ::sqlock::detail::register_module(host, register_all);                                 \
  }                                                                                        \
  extern "C" SQLOCK_API const char* sqlock_backend_module_version() {                      \
    return SQLOCK_VERSION_STRING;                                                          \
  }

}  // namespace sqlock
