// Connection strings of the PostgreSQL backend: sqlock's URL split into libpq's part and the
// backend's options (the typed URL readers of the core), libpq's two forms (URI and
// key=value) checked without connecting, and the passwords they carry kept out of every
// message: describe() shows redact_conninfo(), and every message that may quote a connection
// string or libpq's words about it goes through a scrubber that knows the secrets.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sqlock::postgres {

/// `conninfo` (a libpq URI or key=value string) with every password replaced by "***": the
/// user-info password of a URI, and `password=` in a URI query or a key=value string.
std::string redact_conninfo(std::string_view conninfo);

/// Replaces the passwords of one connection string in messages. Knows each password as
/// written (percent-encoded, quoted) and as decoded.
class scrubber {
 public:
  scrubber() = default;
  /// The secrets of `conninfo` (best effort even when it does not parse).
  explicit scrubber(std::string_view conninfo);
  /// `message` with every secret replaced by "***".
  std::string operator()(std::string message) const;

 private:
  std::vector<std::string> secrets_;
};

/// Throws config_error (redacted, scrubbed) unless libpq can parse `conninfo`.
void check_conninfo(const std::string& conninfo);

}  // namespace sqlock::postgres
