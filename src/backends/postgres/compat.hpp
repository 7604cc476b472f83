// The peers' layouts a PostgreSQL URL may ask for (compat=), and the backend of each.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "sqlock/postgres/postgres.hpp"

namespace sqlock::postgres {

/// The values of compat= (docs/interop.md).
inline constexpr std::string_view compat_layouts[] = {"shedlock", "distributedlock", "raw"};

/// The backend of the layout `o.compat` (not empty) on `conninfo`; describe() shows `shown`.
/// Throws config_error for an unknown layout or a mode it cannot carry.
std::shared_ptr<backend> open_compat(const std::string& conninfo, const std::string& shown,
                                     const options& o);

}  // namespace sqlock::postgres
