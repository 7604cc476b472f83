// libFuzzer target: the duration parser ("250ms", "1.5s", "5m", ...). Any input either parses
// to a duration >= 0 or throws sqlock::error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto d = sqlock::parse_duration(text);
    if (d.count() < 0) std::abort();  // a negative duration must never come out
  } catch (const sqlock::error&) {
  }
  return 0;
}
