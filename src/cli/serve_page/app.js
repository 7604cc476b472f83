// The sqlock admin page. Every value from the store is shown with textContent, never parsed as
// HTML. The admin token lives in sessionStorage and travels only in the Authorization header.
'use strict';

const TOKEN_KEY = 'sqlock-admin-token';
const $ = (id) => document.getElementById(id);
// The server sorts and pages the locks: the page holds one page of them.
const PAGE = 100;
const state = { rows: [], total: 0, offset: 0, sortKey: 'name', sortDir: 1, info: null,
  selected: null, lastGood: null, pending: null, waitingOffset: 0 };

function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (token()) headers['Authorization'] = 'Bearer ' + token();
  const r = await fetch(path, Object.assign({}, options, { headers, cache: 'no-store' }));
  const body = await r.text();
  if (!r.ok) { const e = new Error(body.trim() || r.statusText); e.status = r.status; throw e; }
  return body ? JSON.parse(body) : null;
}

// "12 s", "3 m", "2 h 5 m", "4 d".
function duration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return s + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' m';
  if (s < 86400) {
    const m = Math.floor((s % 3600) / 60);
    return Math.floor(s / 3600) + ' h' + (m ? ' ' + m + ' m' : '');
  }
  return Math.floor(s / 86400) + ' d';
}
function heldText(l) { return l.age_s == null ? 'unknown' : 'held ' + duration(l.age_s); }
function expiresText(l) {
  if (l.expires_in_s == null) return 'with its session';
  return l.expires_in_s >= 0 ? 'expires in ' + duration(l.expires_in_s)
                             : 'expired ' + duration(-l.expires_in_s) + ' ago';
}

// "exclusive", "shared", "permit of 3": each shared holder and permit is its own row.
function kindText(l) {
  if (l.kind === 'permit') return 'permit of ' + l.permits;
  return l.kind || 'exclusive';
}

function notice(text, isError) {
  $('notice').textContent = text;
  $('notice').className = isError ? 'error' : '';
}

function cell(tr, text, cls) {
  const td = document.createElement('td');
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

// "17592186044417" with its parts where the backend's fences have some: "epoch 1 · #1".
function fenceParts(l) {
  const p = l.fence_parts;
  if (!p) return '';
  if (p.revision != null) return 'revision ' + p.revision;
  return 'epoch ' + p.epoch + ' \u00b7 #' + p.counter;
}

function fenceCell(tr, l) {
  const td = cell(tr, String(l.fence), 'num fence');
  const parts = fenceParts(l);
  if (parts) {
    const small = document.createElement('small');
    small.className = 'parts';
    small.textContent = parts;
    td.append(document.createElement('br'), small);
  }
}

// The sorted column's header, at once on a click (the rows follow the server's answer).
function markSort() {
  for (const th of document.querySelectorAll('th[data-key]')) {
    const on = th.dataset.key === state.sortKey;
    if (on) th.setAttribute('aria-sort', state.sortDir > 0 ? 'ascending' : 'descending');
    else th.removeAttribute('aria-sort');
  }
}

function render() {
  const tb = $('rows');
  tb.replaceChildren();
  const rows = state.rows;
  for (const l of rows) {
    const tr = document.createElement('tr');
    tr.dataset.name = l.name;
    if (state.selected === l.name) tr.className = 'selected';
    cell(tr, l.name, 'name');
    fenceCell(tr, l);
    cell(tr, heldText(l));
    cell(tr, expiresText(l), l.expiring_soon ? 'soon' : '');
    cell(tr, kindText(l), 'kind');
    cell(tr, l.mode);
    cell(tr, l.holder);
    if (canTellWaiting()) cell(tr, l.waiting ? String(l.waiting) : '', 'num waiting');
    const td = cell(tr, '', 'actions');
    if (state.info && !state.info.read_only) {
      const b = document.createElement('button');
      b.textContent = 'release';
      b.className = 'release';
      b.addEventListener('click', (ev) => { ev.stopPropagation(); askRelease(l.name); });
      td.appendChild(b);
    }
    tr.addEventListener('click', () => {
      state.selected = l.name;
      state.waitingOffset = 0;
      render();
      refreshWaiting();
    });
    tb.appendChild(tr);
  }
  $('empty').hidden = state.total > 0;
  $('count').textContent = state.total + (state.total === 1 ? ' lock held' : ' locks held');
  const last = state.offset + rows.length;
  $('page-range').textContent = state.total > PAGE ?
    (state.offset + 1) + '\u2013' + last + ' of ' + state.total : '';
  $('page-prev').hidden = $('page-next').hidden = state.total <= PAGE;
  $('page-prev').disabled = state.offset === 0;
  $('page-next').disabled = last >= state.total;
  for (const th of document.querySelectorAll('th.waiting-col')) th.hidden = !canTellWaiting();
  markSort();
  renderDetails();
}

// Whether the store can tell which requests wait (ZooKeeper, etcd).
function canTellWaiting() {
  return !!(state.info && state.info.capabilities && state.info.capabilities.waiting);
}

function renderDetails() {
  const l = state.rows.find((r) => r.name === state.selected);
  $('details').hidden = !l;
  if (!l) return;
  const dl = $('detail-list');
  dl.replaceChildren();
  const parts = (l.holder || '').split(':');
  const fence = String(l.fence) + (fenceParts(l) ? ' (' + fenceParts(l) + ')' : '');
  const fields = [['name', l.name], ['owner token', l.owner], ['fence', fence],
    ['holder', l.holder || 'unknown']];
  // sqlock run's default holder text: HOST:PID:COMMAND LINE.
  if (parts.length >= 3 && /^[0-9]+$/.test(parts[1])) {
    fields.push(['host', parts[0]], ['pid', parts[1]], ['command', parts.slice(2).join(':')]);
  }
  if (l.waiting != null) fields.push(['waiting', String(l.waiting)]);
  fields.push(['mode', l.mode], ['acquired at', l.acquired_at || 'unknown'],
    ['expires at', l.expires_at || 'with its session'], ['held', heldText(l)],
    ['expires', expiresText(l)]);
  if (l.lease_s != null) {
    fields.push(['lease (as seen)', duration(l.lease_s) +
      (l.expiring_soon ? ': less than half left, a renewal is overdue' : '')]);
  }
  for (const [k, v] of fields) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v;
    dl.append(dt, dd);
  }
}

function storeDown(message) {
  const b = $('banner');
  b.hidden = false;
  const since = state.lastGood ? ' (last answer ' + duration((Date.now() - state.lastGood) / 1000) +
    ' ago; the table shows that answer)' : '';
  // The server's 503 text already says "store unavailable: ..."; a failed fetch does not.
  const text = /^store unavailable/i.test(message) ? message.replace(/^s/, 'S')
                                                   : 'Store unavailable: ' + message;
  b.textContent = text + since;
  $('locks').classList.add('stale');
}

function locksPath() {
  return 'api/locks?prefix=' + encodeURIComponent($('prefix').value) + '&limit=' + PAGE +
    '&offset=' + state.offset + '&sort=' + encodeURIComponent(state.sortKey) +
    '&dir=' + (state.sortDir > 0 ? 'asc' : 'desc');
}

async function refresh() {
  try {
    if (!state.info) await loadInfo();
    let page = await api(locksPath());
    if (page.offset > 0 && page.offset >= page.total) {  // the last page emptied meanwhile
      state.offset = Math.max(0, page.total - PAGE);
      page = await api(locksPath());
    }
    state.rows = page.rows;
    state.total = page.total;
    state.offset = page.offset;
    state.lastGood = Date.now();
    $('banner').hidden = true;
    $('locks').classList.remove('stale');
    $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
    render();
    refreshWaiting();
    refreshEvents();
  } catch (e) {
    if (e.status === 401) {
      $('banner').hidden = false;
      $('banner').textContent = 'This server is private: enter the admin token.';
    } else {
      storeDown(e.message);
    }
  }
}

// The waiting requests of the selected lock, or of every lock under the filter; one page of
// them, in queue order, for stores that can tell.
async function refreshWaiting() {
  if (!canTellWaiting()) return;
  const one = state.rows.some((r) => r.name === state.selected);
  const scope = one ? 'name=' + encodeURIComponent(state.selected)
                    : 'prefix=' + encodeURIComponent($('prefix').value);
  try {
    const page = await api('api/waiting?' + scope + '&limit=' + PAGE + '&offset=' +
      state.waitingOffset);
    const body = $('waiting-rows');
    body.replaceChildren();
    for (const w of page.rows) {
      const tr = document.createElement('tr');
      cell(tr, w.name, 'name');
      cell(tr, w.position == null ? '' : String(w.position), 'num position');
      cell(tr, kindText(w), 'kind');
      cell(tr, w.since || 'unknown');
      cell(tr, w.waited_s == null ? '' : duration(w.waited_s));
      cell(tr, w.holder);
      body.appendChild(tr);
    }
    // A store with a queue gives positions; elsewhere (the SQL stores) the first request to
    // try after a release gets the lock, and the rows come by when each began waiting.
    const queued = page.rows.some((w) => w.position != null);
    $('waiting-scope').textContent = (one ? 'Requests waiting for the selected lock'
      : 'Requests waiting for a lock under the filter') + (queued
      ? ', in queue order: position 1 is granted next.'
      : ', by when each began waiting: this store keeps no queue order.');
    $('waiting-count').textContent = page.total + (page.total === 1 ? ' request waiting'
                                                                     : ' requests waiting');
    const last = page.offset + page.rows.length;
    $('waiting-range').textContent = page.total > PAGE ?
      (page.offset + 1) + '\u2013' + last + ' of ' + page.total : '';
    $('waiting-prev').hidden = $('waiting-next').hidden = page.total <= PAGE;
    $('waiting-prev').disabled = page.offset === 0;
    $('waiting-next').disabled = last >= page.total;
    $('no-waiting').hidden = page.total > 0;
    $('waiting').hidden = false;
  } catch (e) {
    // The lock table shows the store's state; this section keeps its last answer.
  }
}

// The audit trail, for stores that keep one; it follows the name filter.
async function refreshEvents() {
  if (!state.info || !state.info.capabilities || !state.info.capabilities.events) return;
  try {
    const events = await api('api/events?limit=50&prefix=' +
      encodeURIComponent($('prefix').value));
    const body = $('event-rows');
    body.replaceChildren();
    for (const e of events) {
      const tr = document.createElement('tr');
      cell(tr, e.at);
      cell(tr, e.event);
      cell(tr, e.name);
      cell(tr, e.fence ? String(e.fence) : '', 'num');
      cell(tr, e.mode);
      cell(tr, e.holder);
      cell(tr, e.actor);
      cell(tr, e.detail);
      body.appendChild(tr);
    }
    $('no-events').hidden = events.length > 0;
    $('events').hidden = false;
  } catch (e) {
    // The lock table shows the store's state; the trail just keeps its last answer.
  }
}

function askRelease(name) {
  if (!token()) {
    notice('Enter the admin token to release locks.', true);
    $('token').focus();
    return;
  }
  state.pending = name;
  $('confirm-name').textContent = name;
  $('confirm').showModal();
}

async function release() {
  const name = state.pending;
  $('confirm').close();
  state.pending = null;
  try {
    const r = await api('api/release', { method: 'POST',
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name }) });
    notice(r.released ? 'Released ' + name + ' as ' + r.actor + '.' : name + ' was not held.', false);
  } catch (e) {
    if (e.status === 401) notice('The admin token was refused.', true);
    else if (e.status === 503) storeDown(e.message);
    else notice('Release failed: ' + e.message, true);
  }
  refresh();
}

function showTokenState() {
  $('token-state').textContent = token() ? 'token set for this tab' : '';
}

async function start() {
  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const t = $('token').value.trim();
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    $('token').value = '';
    showTokenState();
    load();
  });
  $('token-forget').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showTokenState();
  });
  $('confirm-cancel').addEventListener('click', () => { state.pending = null; $('confirm').close(); });
  $('confirm-ok').addEventListener('click', release);
  $('prefix').addEventListener('input', () => { state.offset = 0; state.waitingOffset = 0; refresh(); });
  $('page-prev').addEventListener('click', () => {
    state.offset = Math.max(0, state.offset - PAGE);
    refresh();
  });
  $('page-next').addEventListener('click', () => { state.offset += PAGE; refresh(); });
  $('waiting-prev').addEventListener('click', () => {
    state.waitingOffset = Math.max(0, state.waitingOffset - PAGE);
    refreshWaiting();
  });
  $('waiting-next').addEventListener('click', () => { state.waitingOffset += PAGE; refreshWaiting(); });
  for (const th of document.querySelectorAll('th[data-key]')) {
    th.addEventListener('click', () => {
      if (state.sortKey === th.dataset.key) state.sortDir = -state.sortDir;
      else { state.sortKey = th.dataset.key; state.sortDir = 1; }
      state.offset = 0;
      markSort();
      refresh();
    });
  }
  showTokenState();
  await load();
  setInterval(refresh, 2000);
}

// What the server serves; it answers 503 until it has reached the store.
async function loadInfo() {
  state.info = await api('api/info');
  $('backend').textContent = state.info.backend + (state.info.read_only ? ' (read-only)' : '');
}

async function load() {
  state.info = null;
  await refresh();
}

start();
