// URL parsing shared by every backend: `scheme://user:pass@h1:p1,h2:p2/path?k=v&k2=v2` and the
// opaque form `scheme:path?k=v` (sqlite:/var/lib/app/locks.db, memory:). Percent-escapes are
// decoded; malformed input throws config_error naming what is wrong. Also duration parsing
// ("250ms", "30s", "5m", "1h") for URLs and the CLI, percent-encoding with a caller's set of
// plain bytes (backends' key and node names), and the UTC timestamp text backends list.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sqlock/export.hpp"

namespace sqlock {

/// One host of the authority part.
struct url_host {
  std::string host;  ///< host name or address ("" when absent); IPv6 without brackets
  int port = 0;      ///< 0 = not given
};

/// A parsed URL.
class SQLOCK_API url {
 public:
  /// Parses `text`; throws config_error on malformed input.
  static url parse(std::string_view text);

  std::string scheme;                        ///< lower-cased scheme ("postgresql")
  bool has_authority = false;                ///< "//" followed the scheme
  std::optional<std::string> user;           ///< decoded user name
  std::optional<std::string> password;       ///< decoded password
  std::vector<url_host> hosts;               ///< comma-separated host list
  std::string path;                          ///< decoded path ("/db", "/var/lib/x.db", "")
  std::map<std::string, std::string> query;  ///< decoded query parameters (last one wins)
  std::string original;                      ///< the text as given

  /// Query parameter or `fallback`.
  std::string param(const std::string& key, const std::string& fallback = {}) const;
  /// Removes and returns a query parameter.
  std::optional<std::string> take(const std::string& key);
  /// The URL text with the password replaced by "***", for messages and logs.
  std::string redacted() const;
  /// Throws config_error if a query key is not in `allowed`.
  void check_params(const std::vector<std::string>& allowed) const;
  // Typed readers of query parameters, the one way every backend reads its options. Each
  // returns nullopt when the parameter is absent and throws config_error naming the key, the
  // (redacted) URL and what is accepted when the value is malformed or out of range.

  /// A duration (parse_duration()) within [min, max].
  std::optional<std::chrono::milliseconds> duration_param(
      const std::string& key, std::chrono::milliseconds min = std::chrono::milliseconds(0),
      std::chrono::milliseconds max = std::chrono::milliseconds::max()) const;
  /// A whole number within [min, max] (decimal digits only).
  std::optional<std::int64_t> count_param(const std::string& key, std::int64_t min,
                                          std::int64_t max) const;
  /// A switch: on/off, true/false, yes/no, 1/0 (any case).
  std::optional<bool> flag_param(const std::string& key) const;
  /// One of `choices` (exact match).
  std::optional<std::string> choice_param(const std::string& key,
                                          const std::vector<std::string>& choices) const;
};

/// `text` (a URL that may not parse) with any password replaced by "***": for messages.
/// The same as redact_secrets().
SQLOCK_API std::string redact_url(std::string_view text);
/// Any text (a message, a command line, a URL, a libpq conninfo) with every password replaced
/// by "***": the user-info password of each URL in it, well-formed or not (`pg:/u:pw@h`,
/// multi-host, IPv6), and the value of each secret parameter (password=, sslpassword=, token=,
/// auth=, secret=, pwd=, ...) of a URL query or a conninfo (quoted values too).
SQLOCK_API std::string redact_secrets(std::string_view text);

/// Percent-decodes `s`; throws config_error on a bad escape (the message does not repeat `s`).
SQLOCK_API std::string percent_decode(std::string_view s);
/// Percent-encodes everything except unreserved characters.
SQLOCK_API std::string percent_encode(std::string_view s);
/// Percent-encodes (upper-case %XX) every byte for which `plain` returns false.
SQLOCK_API std::string percent_encode(std::string_view s, bool (*plain)(unsigned char));

/// Parses "250ms", "30s", "5m", "1h", "1.5s"; a bare number is seconds. Negative, empty,
/// space-padded or malformed input throws config_error; "0" is allowed and returns 0ms.
SQLOCK_API std::chrono::milliseconds parse_duration(std::string_view text);

/// `epoch_ms` (milliseconds since the Unix epoch, >= 0) as UTC ISO-8601 text with milliseconds:
/// "2024-05-01T12:00:00.250Z".
SQLOCK_API std::string format_utc_ms(std::int64_t epoch_ms);

}  // namespace sqlock
