// The GET_LOCK name of a lock name, computed in the client exactly as the schema's
// sqlock_lock_name() does (sql/mysql/00_functions.sql): 'sqlock:' + the name when it is 1..57
// characters of [a-z0-9_.:/-], else 'sqlock#' + the first 57 hex digits of its SHA-256. The
// library releases and checks a hold with plain statements on that name, which spares a stored
// function call per release; a test compares the two for a set of odd names.
#pragma once

#include <string>
#include <string_view>

namespace sqlock::mysql::detail {

std::string get_lock_name(std::string_view name);

}  // namespace sqlock::mysql::detail
