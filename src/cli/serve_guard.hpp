// The gate in front of every `sqlock serve` request: the Host header must name the address the
// server listens on (or an --allow-host name), so a DNS-rebinding page cannot reach it under a
// foreign name; a POST whose Origin is not the served origin is refused; changes (and, with
// --private, reads) need an admin token as an `Authorization: Bearer` header, compared in
// constant time. Each token has a name, the actor of what is done with it; its secret is never
// printed, logged or accepted from a URL.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sqlock::cli {

/// `host:port` split and checked: port 0..65535 (0 = any free port), IPv6 in brackets.
struct listen_address {
  std::string host;  ///< as given, without brackets ("127.0.0.1", "::1", "0.0.0.0")
  int port = 0;      ///< 0 = let the system choose

  /// Parses `--listen`; config_error on a missing or bad port.
  static listen_address parse(const std::string& text);
};

/// One admin token: the name that stands for its holder (the actor of a forced release) and the
/// secret sent as `Authorization: Bearer SECRET`.
struct admin_token {
  std::string name;    ///< letters, digits and `._@-`; "admin" for a token given without one
  std::string secret;  ///< never printed
};

/// The admin tokens of `token_file`, one a line as `NAME:SECRET` or a bare `SECRET` (named
/// "admin"); blank lines and lines starting with `#` are skipped, blanks around a line removed.
/// When `token_file` is empty: one token from $SQLOCK_ADMIN_TOKEN in the same form; none when it
/// is unset. config_error when the file cannot be read, holds no token, repeats a name or a
/// secret, or a name has other characters; the message names the line, never its text.
std::vector<admin_token> load_admin_tokens(const std::string& token_file);

/// Whether `given` equals `expected`, in time that depends only on the length of `given`.
bool tokens_equal(std::string_view given, std::string_view expected) noexcept;

/// Why a request was refused: HTTP status and a short reason (never the token).
struct refusal {
  int status = 403;    ///< 401 (no/wrong token), 403 (Origin, no token configured), 421 (Host)
  std::string reason;  ///< plain text for the response body
};

/// What a request needs to pass.
enum class access { page, read, change };

/// Host, Origin and token checks for one server.
class request_guard {
 public:
  /// `allow_hosts`: extra Host names (with or without ":port"). `private_reads`: reads need a
  /// token too. No `tokens` refuses every change.
  request_guard(const listen_address& listen, std::vector<std::string> allow_hosts,
                std::vector<admin_token> tokens, bool private_reads);

  /// Sets the port once bound (for --listen HOST:0).
  void bound_to(int port);

  /// Checks one request; empty when it may proceed.
  std::optional<refusal> check(access what, std::string_view host, std::string_view origin,
                               std::string_view authorization, bool is_post) const;

  /// The name of the token an `Authorization: Bearer SECRET` header carries; nullopt for none
  /// or an unknown secret. Every configured secret is compared, each in constant time.
  std::optional<std::string> actor(std::string_view authorization) const;

  /// Whether changes are possible at all (a token is configured).
  bool has_token() const { return !tokens_.empty(); }
  /// Whether reads need the token.
  bool private_reads() const { return private_; }

 private:
  bool host_allowed(std::string_view host) const;

  std::string listen_host_;
  int port_ = 0;
  std::vector<std::string> allow_;
  std::vector<admin_token> tokens_;
  bool private_ = false;
};

}  // namespace sqlock::cli
