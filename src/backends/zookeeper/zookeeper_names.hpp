// Lock names as znode names: the check every lock name passes before anything is sent, and the
// reversible escape of sqlock's own layout (zookeeper_names.cpp). Internal.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sqlock::zookeeper::detail {

/// Longest lock name accepted, in bytes (escaped, a znode name is at most three times longer;
/// ZooKeeper's own limit is jute.maxbuffer, 1 MiB per request).
inline constexpr std::size_t max_name_bytes = 4096;

/// Throws config_error unless `name` is a non-empty, valid UTF-8 lock name of at most
/// max_name_bytes (checked before anything is sent).
void check_name(std::string_view name);

/// The znode name of `s`: bytes outside [A-Za-z0-9_.:@+=,~-] as %XX; all-dot names escaped.
std::string escape(std::string_view s);
/// The inverse of escape(); nullopt for text escape() cannot produce.
std::optional<std::string> unescape(std::string_view s);

}  // namespace sqlock::zookeeper::detail
