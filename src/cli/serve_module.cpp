// The entry points of the HTTP module (libsqlock-cli-serve.so): `sqlock serve`'s web page and
// `sqlock doctor --patroni` need cpp-httplib and with it OpenSSL, zlib and brotli, whose
// loading and initialisation would otherwise cost every `sqlock` invocation; http_module.cpp
// loads this module on demand. Both sides are this build's: C++ types cross by pointer.
#include "common.hpp"
#include "sqlock/export.hpp"

extern "C" SQLOCK_API int sqlock_cli_serve_v1(const sqlock::cli::serve_args* a) {
  return sqlock::cli::serve_command(*a);
}

extern "C" SQLOCK_API void sqlock_cli_patroni_v1(const std::string* rest_url,
                                                 const std::string* store_url,
                                                 const sqlock::steady_time* deadline,
                                                 std::vector<sqlock::finding>* out) {
  *out = sqlock::cli::patroni_findings(*rest_url, *store_url, *deadline);
}
