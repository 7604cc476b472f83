// `sqlock serve`: the admin page and its API (see docs/cli.md, docs/operations.md).
//   GET  /, /app.js, /style.css  the page (embedded)
//   GET  /healthz                200 when the store answers, 503 with the reason when not
//                                (also while serve is still connecting to it)
//   GET  /metrics                Prometheus text: this process's counters and the store's view
//   GET  /api/info               backend, mode, capabilities, what needs the token
//   GET  /api/locks              held locks as JSON (?prefix=), with age_s, expires_in_s and
//                                waiting (requests waiting for the name; null when the store
//                                cannot tell); ?limit=&offset=&sort=&dir= for one sorted page
//   GET  /api/waiting            requests waiting for locks (?prefix= or ?name=), by name and
//                                queue position, with waited_s; ?limit=&offset= for one page;
//                                501 when the store cannot tell
//   GET  /api/events             the store's audit trail, newest first (?prefix=&limit=)
//   POST /api/release            body {"name": "..."}: forced release (needs a token; the
//                                token's name is the actor, logged and answered)
// Every request passes the request_guard (Host, Origin, token) first.
#include <httplib.h>

#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "serve_assets.hpp"
#include "serve_guard.hpp"
#include "serve_leases.hpp"
#include "serve_link.hpp"
#include "serve_metrics.hpp"
#include "serve_store.hpp"
#include "sqlock/url.hpp"

namespace sqlock::cli {
namespace {

using httplib::Request;
using httplib::Response;

void reply(Response& res, int status, const std::string& text) {
  res.status = status;
  res.set_content(text + "\n", "text/plain; charset=utf-8");
}

void reply_json(Response& res, const nlohmann::json& j) {
  res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

access access_of(const Request& req) {
  if (req.method == "POST") return access::change;
  if (req.path.rfind("/api/", 0) == 0 || req.path == "/metrics") return access::read;
  return access::page;  // the page itself and /healthz: the token is typed into the page
}

// Answers 503 for a store that does not answer, 400 for a bad request.
// Why a request found no store: serve is still connecting to it.
void not_connected(const store_link& link, Response& res) {
  auto why = link.why();
  reply(res, 503, "store unavailable: " + (why.empty() ? std::string("connecting") : why));
}

void release_route(const store_link& link, const serve_args& a, const request_guard& guard,
                   serve_metrics& m, const Request& req, Response& res) {
  if (a.read_only) return reply(res, 403, "read-only");
  // The guard let the request through, so its token is a configured one.
  auto actor = guard.actor(req.get_header_value("Authorization")).value_or("?");
  auto c = link.get();
  if (!c) return not_connected(link, res);
  std::string name;
  try {
    name = nlohmann::json::parse(req.body).at("name").get<std::string>();
  } catch (const std::exception&) {
    return reply(res, 400, R"(body must be JSON {"name": "..."})");
  }
  try {
    bool released = c->force_release(name, actor);
    m.count_release(released ? "released" : "not_held");
    // The name as a JSON string: control characters in a name cannot forge log lines.
    auto shown = nlohmann::json(name).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
    std::cerr << "sqlock serve: force release of " << shown << " by " << actor << " from "
              << req.remote_addr << ": " << (released ? "released" : "not held") << "\n";
    reply_json(res, {{"released", released}, {"actor", actor}});
  } catch (const config_error& e) {
    reply(res, 400, shown(e.what()));
  } catch (const unsupported& e) {
    reply(res, 501, e.what());
  } catch (const std::exception& e) {
    m.count_release("error");
    reply(res, 503, "store unavailable: " + shown(e.what()));
  }
}

// The newest events of the store's audit trail: 501 when it keeps none, 400 for a bad limit.
void events_route(const store_link& link, const Request& req, Response& res) {
  auto c = link.get();
  if (!c) return not_connected(link, res);
  std::size_t limit = 100;
  if (req.has_param("limit")) {
    try {
      limit = std::stoul(req.get_param_value("limit"));
    } catch (const std::exception&) {
      limit = 0;
    }
    if (limit < 1 || limit > 10000) return reply(res, 400, "limit must be 1..10000");
  }
  try {
    auto json = nlohmann::json::array();
    for (const auto& e : c->events(req.get_param_value("prefix"), limit))
      json.push_back({{"at", e.at},
                      {"event", e.event},
                      {"name", e.name},
                      {"owner", e.owner},
                      {"fence", e.fence},
                      {"mode", e.mode},
                      {"holder", e.holder},
                      {"actor", e.actor},
                      {"detail", e.detail}});
    reply_json(res, json);
  } catch (const unsupported& e) {
    reply(res, 501, e.what());
  } catch (const std::exception& e) {
    reply(res, 503, "store unavailable: " + shown(e.what()));
  }
}

// A whole number query parameter within [0, max]; nullopt when absent, -1 when malformed.
long long count_param(const Request& req, const char* key, long long max, long long fallback) {
  if (!req.has_param(key)) return fallback;
  try {
    auto v = std::stoll(req.get_param_value(key));
    return v >= 0 && v <= max ? v : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

// One page of `rows` (an array): {"total", "offset", "limit", "rows"}.
nlohmann::json page_of(nlohmann::json rows, long long limit, long long offset) {
  auto total = rows.size();
  auto from = std::min<std::size_t>(static_cast<std::size_t>(offset), total);
  auto to = std::min<std::size_t>(from + static_cast<std::size_t>(limit), total);
  nlohmann::json page = nlohmann::json::array();
  for (auto i = from; i < to; ++i) page.push_back(std::move(rows[i]));
  return {{"total", total}, {"offset", from}, {"limit", limit}, {"rows", std::move(page)}};
}

// The held locks: all of them as an array, or with ?limit= one sorted page of them as
// {"total", "offset", "limit", "expiring_soon", "rows"}.
void locks_route(const store_link& link, lease_tracker& leases, const Request& req, Response& res) {
  auto c = link.get();
  if (!c) return not_connected(link, res);
  auto limit = count_param(req, "limit", 10000, 0);
  auto offset = count_param(req, "offset", std::numeric_limits<int>::max(), 0);
  if (limit < 0 || offset < 0) return reply(res, 400, "limit must be 1..10000, offset >= 0");
  nlohmann::json rows;
  try {
    const auto prefix = req.get_param_value("prefix");
    rows = locks_json(c->list(prefix), std::chrono::system_clock::now(), leases,
                      c->get_backend().kind());
    add_waiting_counts(rows, c->caps().waiting ? c->waiting(prefix)
                                               : std::optional<std::vector<waiting_request>>());
  } catch (const std::exception& e) {
    return reply(res, 503, "store unavailable: " + shown(e.what()));
  }
  if (req.has_param("sort"))
    sort_rows(rows, req.get_param_value("sort"), req.get_param_value("dir") == "desc" ? -1 : 1);
  if (!req.has_param("limit")) return reply_json(res, rows);
  std::size_t soon = 0;
  for (const auto& r : rows) soon += r["expiring_soon"].get<bool>();
  auto page = page_of(std::move(rows), limit, offset);
  page["expiring_soon"] = soon;
  reply_json(res, page);
}

// The requests waiting for locks under ?prefix= (or of the one ?name=): 501 when the store
// cannot tell.
void waiting_route(const store_link& link, const Request& req, Response& res) {
  auto c = link.get();
  if (!c) return not_connected(link, res);
  auto limit = count_param(req, "limit", 10000, 0);
  auto offset = count_param(req, "offset", std::numeric_limits<int>::max(), 0);
  if (limit < 0 || offset < 0) return reply(res, 400, "limit must be 1..10000, offset >= 0");
  const bool one = req.has_param("name");
  const auto prefix = req.get_param_value(one ? "name" : "prefix");
  std::vector<waiting_request> rows;
  try {
    rows = c->waiting(prefix);
  } catch (const unsupported& e) {
    return reply(res, 501, e.what());
  } catch (const std::exception& e) {
    return reply(res, 503, "store unavailable: " + shown(e.what()));
  }
  if (one) std::erase_if(rows, [&](const waiting_request& w) { return w.name != prefix; });
  auto json = waiting_rows_json(std::move(rows), std::chrono::system_clock::now());
  reply_json(res, req.has_param("limit") ? page_of(std::move(json), limit, offset) : json);
}

void add_routes(httplib::Server& srv, const store_link& link, const std::string& backend,
                const serve_args& a, const request_guard& guard, serve_metrics& m,
                lease_tracker& leases) {
  for (const auto& f : page_assets()) {
    srv.Get(std::string(f.path), [&f](const Request&, Response& res) {
      res.set_content(std::string(f.body), std::string(f.content_type));
    });
  }
  srv.Get("/healthz", [&](const Request& req, Response& res) {
    auto c = link.get();
    auto why = c ? probe_store(*c) : "connecting: " + link.why();
    if (why.empty()) return reply(res, 200, "ok");
    // With --private the reason (host names, errors) is for token holders only.
    bool show =
        !guard.private_reads() || !guard.check(access::read, req.get_header_value("Host"), "",
                                               req.get_header_value("Authorization"), false);
    reply(res, 503, show ? "store unavailable: " + why : "store unavailable");
  });
  srv.Get("/metrics", [&](const Request&, Response& res) {
    try {
      auto c = link.get();
      res.set_content(m.scrape(c.get(), c ? c->get_backend().kind() : backend, leases),
                      "text/plain; version=0.0.4; charset=utf-8");
    } catch (const unsupported& e) {
      reply(res, 501, e.what());
    }
  });
  srv.Get("/api/info", [&](const Request&, Response& res) {
    auto c = link.get();
    if (!c) return not_connected(link, res);
    auto caps = c->caps();
    reply_json(res, {{"backend", c->get_backend().describe()},
                     {"kind", c->get_backend().kind()},
                     {"mode", c->get_backend().mode()},
                     {"read_only", a.read_only},
                     {"token_configured", guard.has_token()},
                     {"private", guard.private_reads()},
                     {"metrics", serve_metrics::available()},
                     {"capabilities",
                      {{"fencing", caps.fencing},
                       {"notify", caps.notify},
                       {"fair", caps.fair},
                       {"session_bound", caps.session_bound},
                       {"list", caps.list},
                       {"force_release", caps.force_release},
                       {"events", caps.events},
                       {"waiting", caps.waiting}}}});
  });
  srv.Get("/api/locks",
          [&](const Request& req, Response& res) { locks_route(link, leases, req, res); });
  srv.Get("/api/waiting",
          [&](const Request& req, Response& res) { waiting_route(link, req, res); });
  srv.Get("/api/events", [&](const Request& req, Response& res) { events_route(link, req, res); });
  srv.Post("/api/release",
           [&](const Request& req, Response& res) { release_route(link, a, guard, m, req, res); });
}

}  // namespace

int serve_command(const serve_args& a) {
  auto listen = listen_address::parse(a.listen);
  auto retry = parse_duration(a.retry_every);
  if (retry.count() <= 0) throw config_error("--retry-every must be > 0");
  request_guard guard(listen, a.allow_hosts, load_admin_tokens(a.token_file), a.private_reads);
  serve_metrics metrics;
  lease_tracker leases;
  client_options opts;
  opts.observer = metrics.lock_observer();
  const auto url_text = resolve_url(a.url);
  const auto backend = url::parse(url_text).scheme;  // the backend's kind, until connected
  store_link link(url_text, opts, retry);

  httplib::Server srv;
  srv.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                           {"Referrer-Policy", "no-referrer"},
                           {"Cache-Control", "no-store"},
                           {"X-Frame-Options", "DENY"},
                           {"Content-Security-Policy",
                            "default-src 'none'; script-src 'self'; style-src 'self'; "
                            "connect-src 'self'; img-src 'self'; base-uri 'none'; "
                            "form-action 'none'; frame-ancestors 'none'"}});
  srv.set_pre_routing_handler([&](const Request& req, Response& res) {
    auto refused =
        guard.check(access_of(req), req.get_header_value("Host"), req.get_header_value("Origin"),
                    req.get_header_value("Authorization"), req.method == "POST");
    if (!refused) return httplib::Server::HandlerResponse::Unhandled;
    if (refused->status == 401) res.set_header("WWW-Authenticate", "Bearer");
    reply(res, refused->status, refused->reason);
    return httplib::Server::HandlerResponse::Handled;
  });
  srv.set_logger([&](const Request&, const Response& res) { metrics.count_request(res.status); });
  add_routes(srv, link, backend, a, guard, metrics, leases);

  int port = listen.port;
  if (port == 0) {
    port = srv.bind_to_any_port(listen.host);
    if (port < 0) throw config_error("cannot listen on " + listen.host);
  } else if (!srv.bind_to_port(listen.host, port)) {
    throw config_error("cannot listen on " + a.listen);
  }
  guard.bound_to(port);
  bool v6 = listen.host.find(':') != std::string::npos;
  std::string where =
      "http://" + (v6 ? "[" + listen.host + "]" : listen.host) + ":" + std::to_string(port) + "/";
  std::cout << where << std::endl;  // the first line of stdout: tests and scripts read the port
  std::cerr << "sqlock serve: " << where << " for "
            << (link.get() ? link.get()->get_backend().describe() : redact_secrets(url_text))
            << (guard.has_token() ? "" : " (no admin token: read-only)") << "\n";
  srv.listen_after_bind();
  return ok;
}

}  // namespace sqlock::cli
