// Lock operations (statements run atomically) and the statement compiler: ":name" parameters
// rewritten to a driver's native placeholders, skipping literals, comments and casts.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sqlock::sql {

/// Placeholder styles for compile().
enum class placeholder { dollar /* $1 */, question /* ? */, colon_name /* :p1 */ };

/// A statement rewritten for a driver: text with native placeholders + parameter names in order.
struct compiled {
  std::string text;                ///< statement text with native placeholders
  std::vector<std::string> names;  ///< parameter name for each placeholder, in order
};

/// Rewrites ":name" parameters to a native placeholder style. Skips string literals, quoted
/// identifiers, comments and "::" casts.
compiled compile(std::string_view statement, placeholder style);

/// The index just past the string literal or quoted identifier that opens at `s[open]` (a ', "
/// or ` character), or s.size() when it is not closed. A doubled quote character stands for
/// itself; a backslash escapes the next character inside the quote characters listed in
/// `backslash_quotes`. Shared by compile() ("'") and the MySQL script splitter ("'\"").
std::size_t quoted_end(std::string_view s, std::size_t open, std::string_view backslash_quotes);

/// One lock operation: one or more statements run atomically; the rows of the last one count.
struct operation {
  std::string key;                      ///< stable id ("acquire"), for statement caching
  std::vector<std::string> statements;  ///< statement texts with :name parameters
};

}  // namespace sqlock::sql
