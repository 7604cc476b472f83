// `sqlock serve`: a small admin page (held locks, forced release) and its JSON API.
//   GET  /               the page
//   GET  /api/locks      held locks as JSON (?prefix=)
//   GET  /api/info       backend, mode, capabilities
//   POST /api/release    body {"name": "..."}; needs header X-Sqlock-Admin: 1 (no cross-site posts)
#include <httplib.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "common.hpp"

namespace sqlock::cli {
namespace {

const char* page = R"html(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>sqlock</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:20px;margin:0 0 .2em} #info{color:#666;margin-bottom:1em}
table{border-collapse:collapse;width:100%} th,td{border-bottom:1px solid #ddd;padding:6px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4} td.name{font-family:monospace;word-break:break-all;max-width:32em}
td.num{text-align:right;font-family:monospace} button{cursor:pointer} #err{color:#b00}
input{padding:4px;width:20em}
</style></head><body>
<h1>sqlock</h1><div id="info"></div>
<p><input id="prefix" placeholder="name prefix"> <span id="count"></span> <span id="err"></span></p>
<table><thead><tr><th>name</th><th>fence</th><th>acquired</th><th>expires</th><th>mode</th><th>holder</th><th>owner</th><th></th></tr></thead>
<tbody id="rows"></tbody></table>
<script>
const readOnly = READ_ONLY;
async function info(){const r=await fetch('api/info');const j=await r.json();
 document.getElementById('info').textContent=j.backend+(readOnly?' (read-only)':'');}
function cell(tr,text,cls){const td=document.createElement('td');td.textContent=text;if(cls)td.className=cls;tr.appendChild(td);return td;}
async function refresh(){
 try{
  const p=document.getElementById('prefix').value;
  const r=await fetch('api/locks?prefix='+encodeURIComponent(p));
  if(!r.ok) throw new Error(await r.text());
  const rows=await r.json(); const tb=document.getElementById('rows'); tb.replaceChildren();
  for(const l of rows){const tr=document.createElement('tr');
   cell(tr,l.name,'name');cell(tr,l.fence,'num');cell(tr,l.acquired_at);cell(tr,l.expires_at||'(session)');
   cell(tr,l.mode);cell(tr,l.holder);cell(tr,l.owner.slice(0,8)+'…');
   const td=cell(tr,'');
   if(!readOnly){const b=document.createElement('button');b.textContent='release';
    b.onclick=async()=>{if(!confirm('Force-release '+l.name+'?'))return;
     const rr=await fetch('api/release',{method:'POST',headers:{'Content-Type':'application/json','X-Sqlock-Admin':'1'},body:JSON.stringify({name:l.name})});
     if(!rr.ok) document.getElementById('err').textContent=await rr.text(); refresh();};
    td.appendChild(b);}
   tb.appendChild(tr);}
  document.getElementById('count').textContent=rows.length+' held';
  document.getElementById('err').textContent='';
 }catch(e){document.getElementById('err').textContent=String(e);}
}
info();refresh();setInterval(refresh,2000);
document.getElementById('prefix').oninput=refresh;
</script></body></html>)html";

}  // namespace

int serve_command(const serve_args& a) {
  auto c = connect(resolve_url(a.url));
  auto colon = a.listen.rfind(':');
  if (colon == std::string::npos) throw config_error("--listen needs address:port");
  std::string host = a.listen.substr(0, colon);
  int port = 0;
  try {
    port = std::stoi(a.listen.substr(colon + 1));
  } catch (const std::exception&) {
    throw config_error("bad port in --listen '" + a.listen + "'");
  }
  httplib::Server srv;
  std::string html = page;
  html.replace(html.find("READ_ONLY"), 9, a.read_only ? "true" : "false");
  srv.Get("/", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(html, "text/html; charset=utf-8");
  });
  srv.Get("/api/info", [&](const httplib::Request&, httplib::Response& res) {
    auto caps = c.caps();
    auto s = c.stats();
    nlohmann::json j{{"backend", c.get_backend().describe()},
                     {"kind", c.get_backend().kind()},
                     {"mode", c.get_backend().mode()},
                     {"read_only", a.read_only},
                     {"capabilities",
                      {{"fencing", caps.fencing},
                       {"notify", caps.notify},
                       {"fair", caps.fair},
                       {"session_bound", caps.session_bound},
                       {"list", caps.list},
                       {"force_release", caps.force_release}}},
                     {"stats", {{"acquisitions", s.acquisitions}, {"releases", s.releases}}}};
    res.set_content(j.dump(), "application/json");
  });
  srv.Get("/api/locks", [&](const httplib::Request& req, httplib::Response& res) {
    try {
      res.set_content(status_json(c.list(req.get_param_value("prefix")), -1), "application/json");
    } catch (const std::exception& e) {
      res.status = 503;
      res.set_content(e.what(), "text/plain");
    }
  });
  srv.Post("/api/release", [&](const httplib::Request& req, httplib::Response& res) {
    if (a.read_only) {
      res.status = 403;
      res.set_content("read-only", "text/plain");
      return;
    }
    if (req.get_header_value("X-Sqlock-Admin") != "1") {
      res.status = 403;
      res.set_content("missing X-Sqlock-Admin header", "text/plain");
      return;
    }
    try {
      auto body = nlohmann::json::parse(req.body);
      std::string name = body.at("name").get<std::string>();
      bool released = c.force_release(name);
      std::cerr << "sqlock serve: force release of '" << name << "' from " << req.remote_addr
                << ": " << (released ? "released" : "not held") << "\n";
      res.set_content(nlohmann::json{{"released", released}}.dump(), "application/json");
    } catch (const std::exception& e) {
      res.status = 400;
      res.set_content(e.what(), "text/plain");
    }
  });
  if (!srv.bind_to_port(host, port)) throw config_error("cannot listen on " + a.listen);
  std::cerr << "sqlock serve: http://" << a.listen << "/ for " << c.get_backend().describe()
            << "\n";
  srv.listen_after_bind();
  return ok;
}

}  // namespace sqlock::cli
