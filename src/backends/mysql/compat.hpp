// The peers' layouts a MySQL/MariaDB URL may ask for (compat=), and the backend of each.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "sqlock/mysql/mysql.hpp"

namespace sqlock::mysql {

/// The values of compat= (docs/interop.md).
inline constexpr std::string_view compat_layouts[] = {"shedlock", "distributedlock", "raw"};

/// The backend of the layout `o.compat` (not empty); describe() shows `url_text` redacted.
/// Throws config_error for an unknown layout or a mode it cannot carry.
std::shared_ptr<backend> open_compat(const options& o, std::string url_text);

}  // namespace sqlock::mysql
