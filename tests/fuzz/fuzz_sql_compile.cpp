// libFuzzer target: the SQL statement compiler (":name" -> native placeholders) and the quoted
// literal scanner it shares with the MySQL splitter. For every placeholder style the output has
// one name per placeholder it wrote, and every name is one the engine knows or an error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sql/params.hpp"
#include "sql/statements.hpp"
#include "sqlock/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (auto style : {sqlock::sql::placeholder::dollar, sqlock::sql::placeholder::question,
                     sqlock::sql::placeholder::colon_name}) {
    try {
      auto c = sqlock::sql::compile(text, style);
      sqlock::sql::params p;
      for (auto& n : c.names) (void)sqlock::sql::lookup(p, n);
    } catch (const sqlock::error&) {
    }
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    char q = text[i];
    if (q != '\'' && q != '"' && q != '`') continue;
    if (sqlock::sql::quoted_end(text, i, "'\"") > text.size()) std::abort();
  }
  return 0;
}
