// The backend-author API in one include: the backend interface and its acquisition, the
// optional admin and schema interfaces, the registry and module entry point, and the helpers
// for bounded waits and background work. A program that only takes locks includes
// sqlock/client.hpp instead, which does not pull any of this in.
#pragma once

#include "sqlock/backend/acquisition.hpp"  // IWYU pragma: export
#include "sqlock/backend/admin.hpp"        // IWYU pragma: export
#include "sqlock/backend/backend.hpp"      // IWYU pragma: export
#include "sqlock/backend/background.hpp"   // IWYU pragma: export
#include "sqlock/backend/registry.hpp"     // IWYU pragma: export
#include "sqlock/backend/request.hpp"      // IWYU pragma: export
#include "sqlock/backend/waiting.hpp"      // IWYU pragma: export
#include "sqlock/types.hpp"                // IWYU pragma: export
