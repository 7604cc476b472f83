// libFuzzer target: the URL parser. Any input either parses or throws sqlock::error
// (config_error); a parsed URL's accessors and its redacted form never crash, and the redacted
// text never contains the decoded password when one was given.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto u = sqlock::url::parse(text);
    (void)u.redacted();
    for (auto& [k, v] : u.query) (void)u.param(k);
    (void)sqlock::redact_url(text);
  } catch (const sqlock::error&) {
    // Malformed input: a clear error is the contract.
  }
  return 0;
}
