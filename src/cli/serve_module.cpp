// The entry point of the `sqlock serve` module (libsqlock-cli-serve.so): the web page needs
// cpp-httplib and with it OpenSSL, zlib and brotli, whose loading and initialisation would
// otherwise cost every `sqlock` invocation; serve_loader.cpp loads this module on demand.
#include "common.hpp"
#include "sqlock/export.hpp"

extern "C" SQLOCK_API int sqlock_cli_serve_v1(const sqlock::cli::serve_args* a) {
  return sqlock::cli::serve_command(*a);
}
