// The Lua scripts of the Redis backend, embedded at build time from lua/*.lua with the SHA-1
// digest EVALSHA needs (computed by CMake, so no script has to be loaded before first use).
#pragma once

#include <string_view>
#include <vector>

namespace sqlock::redis::lua {

/// One embedded script.
struct script {
  std::string_view name;  ///< file name without .lua ("acquire")
  std::string_view text;  ///< the script source, byte for byte
  std::string_view sha;   ///< SHA-1 of text in lower-case hex, as SCRIPT LOAD returns it
};

/// Every embedded script (generated).
const std::vector<script>& all();

/// The embedded script `name` (sqlock::error when there is none: a build fault).
const script& get(std::string_view name);

}  // namespace sqlock::redis::lua
