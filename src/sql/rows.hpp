// A statement's result as the engine reads it: rows of text (NULL = none), and the decoders of
// the answers lock routines give (a truthy first column, a fencing token or count).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sqlock/types.hpp"

namespace sqlock::sql {

/// A result row as text (NULL = nullopt); drivers convert numbers and times to text.
using row = std::vector<std::optional<std::string>>;
/// Rows of a result.
using rows = std::vector<row>;

/// True for "1", "t", "true", "yes" (any case); false for NULL and anything else.
bool truthy(const std::optional<std::string>& v);
/// True when the first column of the first row is truthy: the answer of renew, release,
/// force_release and fence_check routines.
bool says_true(const rows& r);
/// A fencing token (or count) as the database printed it; backend_error naming `what` when it
/// is NULL or not a decimal number.
std::uint64_t decode_u64(const std::optional<std::string>& v, const char* what);
/// A kind column ("shared", "permit"; anything else, NULL too, is exclusive).
lock_kind decode_kind(const std::optional<std::string>& v);

}  // namespace sqlock::sql
