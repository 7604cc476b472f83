// libFuzzer target: the MySQL DELIMITER-aware script splitter. Any script splits without a
// crash, and no statement it returns is empty.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "backends/mysql/dialect.hpp"
#include "sqlock/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    for (auto& s : sqlock::mysql::split_script(text))
      if (s.empty()) std::abort();
  } catch (const sqlock::error&) {
  }
  return 0;
}
