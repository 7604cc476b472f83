// The one door from the tests to the core's acquire loop: tests that drive a backend's
// acquisition as a client would (sqlock::acquire(backend, request, deadline, policy): attempts,
// waits, cancel) include this instead of the core's private header, so a change of the loop's
// home touches this file alone. Every other core facility tests reach through the installed
// headers (sqlock/client.hpp, sqlock/backend.hpp).
#pragma once

#include "core/acquire.hpp"  // IWYU pragma: export
