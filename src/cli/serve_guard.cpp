#include "serve_guard.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "sqlock/errors.hpp"

namespace sqlock::cli {

namespace {

std::string trim(std::string s) {
  auto blank = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && blank(s.back())) s.pop_back();
  auto first = std::find_if_not(s.begin(), s.end(), blank);
  return std::string(first, s.end());
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "::1" || host == "localhost";
}

// "name:port" → name (brackets kept for IPv6), port text ("" when none).
std::pair<std::string_view, std::string_view> split_host(std::string_view h) {
  auto colon = h.rfind(':');
  if (colon == std::string_view::npos || (h.front() == '[' && h.back() == ']')) return {h, {}};
  return {h.substr(0, colon), h.substr(colon + 1)};
}

}  // namespace

listen_address listen_address::parse(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos)
    throw config_error("--listen needs ADDRESS:PORT or :PORT (got '" + text + "')");
  listen_address a;
  // ":PORT" is loopback: the admin page is never opened to the network by leaving a word out.
  a.host = colon == 0 ? "127.0.0.1" : text.substr(0, colon);
  if (a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']')
    a.host = a.host.substr(1, a.host.size() - 2);
  std::string_view p(text);
  p.remove_prefix(colon + 1);
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), a.port);
  if (p.empty() || ec != std::errc() || end != p.data() + p.size() || a.port < 0 || a.port > 65535)
    throw config_error("bad port in --listen '" + text + "' (0..65535; 0 = any free port)");
  if (a.host.empty()) throw config_error("--listen needs an address before the port");
  return a;
}

namespace {

// One token line: "NAME:SECRET" or a bare "SECRET" (named "admin"); `where` names the line.
admin_token parse_token(const std::string& line, const std::string& where) {
  auto colon = line.find(':');
  if (colon == std::string::npos) return {"admin", line};
  admin_token t{line.substr(0, colon), line.substr(colon + 1)};
  auto name_char = [](unsigned char c) { return std::isalnum(c) || std::strchr("._@-", c); };
  if (t.name.empty() || !std::all_of(t.name.begin(), t.name.end(), name_char))
    throw config_error(where +
                       ": a token's name (before ':') may hold only letters, digits and ._@-");
  if (t.secret.empty()) throw config_error(where + ": a token has no secret after ':'");
  return t;
}

}  // namespace

std::vector<admin_token> load_admin_tokens(const std::string& token_file) {
  if (token_file.empty()) {
    const char* env = std::getenv("SQLOCK_ADMIN_TOKEN");
    auto text = env ? trim(env) : std::string();
    if (text.empty()) return {};
    return {parse_token(text, "SQLOCK_ADMIN_TOKEN")};
  }
  std::ifstream in(token_file);
  if (!in) throw config_error("cannot read --token-file " + token_file);
  std::vector<admin_token> tokens;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    auto where = "--token-file " + token_file + " line " + std::to_string(n);
    auto t = parse_token(line, where);
    for (const auto& o : tokens) {
      if (o.name == t.name) throw config_error(where + " repeats the name of an earlier token");
      if (o.secret == t.secret)
        throw config_error(where + " repeats the secret of an earlier token");
    }
    tokens.push_back(std::move(t));
  }
  if (tokens.empty()) throw config_error("--token-file " + token_file + " holds no token");
  return tokens;
}

bool tokens_equal(std::string_view given, std::string_view expected) noexcept {
  if (expected.empty()) return false;
  unsigned diff = given.size() != expected.size() ? 1u : 0u;
  for (std::size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i]) ^
            static_cast<unsigned char>(expected[i % expected.size()]);
  return diff == 0;
}

request_guard::request_guard(const listen_address& listen, std::vector<std::string> allow_hosts,
                             std::vector<admin_token> tokens, bool private_reads)
    : listen_host_(listen.host),
      port_(listen.port),
      allow_(std::move(allow_hosts)),
      tokens_(std::move(tokens)),
      private_(private_reads) {
  for (auto& h : allow_) h = lower(h);
}

void request_guard::bound_to(int port) {
  port_ = port;
}

bool request_guard::host_allowed(std::string_view host) const {
  if (host.empty()) return false;
  std::string h = lower(host);
  auto [name, port] = split_host(h);
  std::string bare(name);
  if (bare.size() >= 2 && bare.front() == '[') bare = bare.substr(1, bare.size() - 2);
  bool port_ok = port == std::to_string(port_);
  // The listen address itself, and the loopback names when it is a loopback address.
  if (port_ok && (bare == lower(listen_host_) || (is_loopback(listen_host_) && is_loopback(bare))))
    return true;
  for (const auto& a : allow_) {
    auto [aname, aport] = split_host(a);
    if (aport.empty() ? aname == name : a == h) return true;
  }
  return false;
}

std::optional<refusal> request_guard::check(access what, std::string_view host,
                                            std::string_view origin, std::string_view authorization,
                                            bool is_post) const {
  if (!host_allowed(host))
    return refusal{421, "Host not served here (start with --allow-host NAME to allow it)"};
  // Browsers send Origin on every POST; a page of another origin must not make changes. The
  // Host was checked above; https is the same origin seen through a TLS-terminating proxy.
  if (is_post && !origin.empty()) {
    auto o = lower(origin), h = lower(host);
    if (o != "http://" + h && o != "https://" + h)
      return refusal{403, "cross-origin request refused"};
  }
  bool needs_token = what == access::change || (what == access::read && private_);
  if (!needs_token) return std::nullopt;
  if (tokens_.empty())
    return refusal{403,
                   "no admin token configured (start with --token-file or SQLOCK_ADMIN_TOKEN)"};
  if (!actor(authorization)) return refusal{401, "admin token required (Authorization: Bearer)"};
  return std::nullopt;
}

std::optional<std::string> request_guard::actor(std::string_view authorization) const {
  constexpr std::string_view bearer = "Bearer ";
  if (authorization.size() <= bearer.size() ||
      lower(authorization.substr(0, bearer.size())) != "bearer ")
    return std::nullopt;
  auto given = authorization.substr(bearer.size());
  // Every secret is compared (no early exit): the time does not tell which one nearly matched.
  const admin_token* found = nullptr;
  for (const auto& t : tokens_)
    if (tokens_equal(given, t.secret)) found = &t;
  if (!found) return std::nullopt;
  return found->name;
}

}  // namespace sqlock::cli
