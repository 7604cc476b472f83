// A backend module as another sqlock version would build it: the entry point registers the
// scheme "otherversion" (a factory that makes nothing) and its version function answers
// SQLOCK_TEST_OTHER_VERSION instead of this library's SQLOCK_VERSION_STRING. The loader must
// refuse it before the entry point runs.
#include "sqlock/backend.hpp"

extern "C" SQLOCK_API void sqlock_backend_module_v1(::sqlock::module_register_fn host) {
  host("otherversion", [](const sqlock::url&) { return std::shared_ptr<sqlock::backend>(); });
}

extern "C" SQLOCK_API const char* sqlock_backend_module_version() {
  return SQLOCK_TEST_OTHER_VERSION;
}
