// The admin page of `sqlock serve` in a real browser: Debian's chromium driven by playwright-core,
// against SQLite and PostgreSQL (SQLOCK_TEST_POSTGRES_URL; skipped only when unset, failed then
// under SQLOCK_TEST_REQUIRE_ALL=1; CTest sets SQLOCK_BROWSER_POSTGRES=1 when the binary has the
// backend) with live holders started by `sqlock run NAME -- sleep 60`; on SQLite also 10,000
// locks written straight into the file (paging, numeric sort), on PostgreSQL serve started
// while its store is down (through a relay that refuses connections until resumed); on
// ZooKeeper (SQLOCK_TEST_ZOOKEEPER_URL, CTest sets SQLOCK_BROWSER_ZOOKEEPER=1) and PostgreSQL a
// `sqlock run` that waits for a held lock.
// Usage: node admin_page.test.mjs SQLOCK_BINARY ARTIFACT_DIR
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const [sqlock, artifacts] = process.argv.slice(2);
assert.ok(sqlock && artifacts, 'usage: node admin_page.test.mjs SQLOCK_BINARY ARTIFACT_DIR');
fs.mkdirSync(artifacts, { recursive: true });
const DEADLINE_MS = 20000;  // every wait below gives up after this

function until(what, check, ms = DEADLINE_MS) {
  const end = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const poll = async () => {
      try {
        const v = await check();
        if (v) return resolve(v);
      } catch { /* not yet */ }
      if (Date.now() > end) return reject(new Error('timed out waiting for ' + what));
      setTimeout(poll, 100);
    };
    poll();
  });
}

// Starts `sqlock serve` on a free loopback port; resolves with its base URL.
function serve(url, token, extra = []) {
  const p = spawn(sqlock, ['serve', '--url', url, '--listen', '127.0.0.1:0', ...extra], {
    env: { ...process.env, SQLOCK_ADMIN_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  const base = new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('sqlock serve printed no address: ' + err)),
      DEADLINE_MS);
    p.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) { clearTimeout(timer); resolve(out.split('\n')[0].trim()); }
    });
    p.on('error', (e) => { clearTimeout(timer); reject(e); });
    p.on('exit', (code) => { clearTimeout(timer); reject(new Error('sqlock serve exited ' + code + ': ' + err)); });
  });
  return { proc: p, base, log: () => err };
}

// A holder: `sqlock run --lease 3s NAME -- sleep 60`; `exited` resolves with its exit code.
function holder(url, name, extra = []) {
  const p = spawn(sqlock, ['run', '--url', url, '--lease', '3s', ...extra, name, '--', 'sleep', '60'],
    { stdio: 'ignore' });
  const exited = new Promise((resolve) => p.on('exit', (code) => resolve(code)));
  return { proc: p, exited };
}

// One raw HTTP request (fetch() may not set Host); resolves with { status, body }.
function request(base, { method = 'GET', path: p = '/', headers = {}, body } = {}) {
  const u = new URL(p, base);
  return new Promise((resolve, reject) => {
    const r = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method,
      headers, timeout: DEADLINE_MS }, (res) => {
      let data = '';
      res.on('data', (d) => { data += d; });
      res.on('end', () => resolve({ status: res.statusCode, body: data }));
    });
    r.on('error', reject);
    r.on('timeout', () => r.destroy(new Error('request timed out')));
    if (body) r.write(body);
    r.end();
  });
}

// A TCP relay in front of a server, so the test can take "the store" away from sqlock serve
// without touching the shared server: stop() closes the port and every relayed connection.
// Made `paused`, it closes every connection at once until resume().
async function relay(targetHost, targetPort, { paused = false } = {}) {
  const sockets = new Set();
  let refusing = paused;
  const server = net.createServer((c) => {
    if (refusing) { c.destroy(); return; }
    const s = net.connect(targetPort, targetHost);
    for (const x of [c, s]) { sockets.add(x); x.on('close', () => sockets.delete(x)); x.on('error', () => {}); }
    c.pipe(s); s.pipe(c);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { port: server.address().port, resume: () => { refusing = false; },
    stop: () => { server.close(); for (const s of sockets) s.destroy(); } };
}

async function launch() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sqlock-chromium-'));
  // A fresh --user-data-dir: playwright passes it to chromium for a persistent context.
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: '/usr/bin/chromium', headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1200, height: 700 } });
  return { context, cleanup: async () => {
    await context.close();
    fs.rmSync(dir, { recursive: true, force: true });
  } };
}

async function suite(t, label, storeUrl, { downViaRelay } = {}) {
  const token = randomBytes(24).toString('hex');
  const tag = randomBytes(4).toString('hex');
  const plain = `browser-job-${tag}`;
  const evil = `<img src=x onerror=alert(1)> ${tag}`;
  let serveUrl = storeUrl, proxy = null;
  if (downViaRelay) {
    const u = new URL(storeUrl);
    proxy = await relay(u.hostname, Number(u.port || 5432), { paused: true });
    u.host = '127.0.0.1:' + proxy.port;
    serveUrl = u.toString();
  }
  const server = serve(serveUrl, token, ['--retry-every', '300ms']);
  const permits = `browser-pool-${tag}`;
  const unrenewed = `browser-unrenewed-${tag}`;
  const holders = [holder(storeUrl, plain), holder(storeUrl, evil),
    holder(storeUrl, permits, ['--permits', '3']), holder(storeUrl, permits, ['--permits', '3'])];
  let cleanup = async () => {};
  t.after(async () => {
    await cleanup();
    for (const h of holders) h.proc.kill('SIGTERM');
    server.proc.kill('SIGTERM');
    if (proxy) proxy.stop();
  });
  const browser = await launch();
  cleanup = browser.cleanup;
  const base = await server.base;
  const shot = (name) => path.join(artifacts, `${label}-${name}.png`);

  const page = await browser.context.newPage();
  const dialogs = [];
  page.on('dialog', async (d) => { dialogs.push(d.type() + ': ' + d.message()); await d.dismiss(); });
  await page.goto(base);

  if (proxy) {
    await t.test('serve started while the store is down: 503, then the locks', async () => {
      await page.locator('#banner', { hasText: 'Store unavailable' }).waitFor({ timeout: DEADLINE_MS });
      assert.equal((await request(base, { path: '/healthz' })).status, 503);
      await page.screenshot({ path: shot('connecting'), fullPage: true });
      proxy.resume();
      await until('/healthz 200', async () => (await request(base, { path: '/healthz' })).status === 200);
      await page.locator('#banner').waitFor({ state: 'hidden', timeout: DEADLINE_MS });
    });
  }

  await t.test('the table shows the live holders', async () => {
    for (const name of [plain, evil]) {
      await page.locator('td.name', { hasText: name }).first().waitFor({ timeout: DEADLINE_MS });
    }
    const held = await page.locator('#rows tr', { hasText: plain }).innerText();
    assert.match(held, /held \d+ s/);
    assert.match(held, /expires in \d+ s/);
    assert.match(held, /exclusive/);
    if (label === 'postgresql') assert.match(held, /epoch \d+ \u00b7 #\d+/, 'the fence\'s parts');
    const pool = page.locator('#rows tr', { hasText: permits });
    await pool.nth(1).waitFor({ timeout: DEADLINE_MS });
    assert.equal(await pool.count(), 2, 'each permit holder has its own row');
    assert.match(await pool.first().innerText(), /permit of 3/);
    await page.screenshot({ path: shot('locks'), fullPage: true });
  });

  await t.test('a name with markup renders as text', async () => {
    const text = await page.locator('td.name', { hasText: tag }).allTextContents();
    assert.ok(text.includes(evil), 'the name is shown verbatim: ' + JSON.stringify(text));
    assert.equal(await page.locator('#rows img').count(), 0, 'no <img> element in the table');
    assert.deepEqual(dialogs, [], 'no dialog fired');
  });

  await t.test('sorting and holder details', async () => {
    await page.locator('th[data-key="name"]').click();  // name descending
    assert.equal(await page.locator('th[data-key="name"]').getAttribute('aria-sort'), 'descending');
    await page.locator('#rows tr', { hasText: plain }).click();
    const details = await page.locator('#details').innerText();
    assert.match(details, /owner token/);
    assert.match(details, /command\s+sleep 60/);
    assert.match(details, /lease \(as seen\)/);
    await page.screenshot({ path: shot('details'), fullPage: true });
  });

  await t.test('expiring soon by the hold\'s own lease', async () => {
    // --at-most 10s is never renewed: red once less than half of it is left; the others, with
    // a 3 s lease renewed every second, never are.
    const p = spawn(sqlock, ['run', '--url', storeUrl, '--at-most', '10s', unrenewed, '--', 'sleep', '60'],
      { stdio: 'ignore' });
    holders.push({ proc: p });
    await page.locator('#rows tr', { hasText: unrenewed }).locator('td.soon')
      .waitFor({ timeout: DEADLINE_MS });
    assert.equal(await page.locator('#rows tr', { hasText: plain }).locator('td.soon').count(), 0);
    await page.screenshot({ path: shot('expiring'), fullPage: true });
  });

  await t.test('release asks for confirmation and the holder exits 70', async () => {
    await page.locator('#token').fill(token);
    await page.locator('#token-use').click();
    const row = page.locator('#rows tr', { hasText: evil });
    await row.locator('button.release').click();
    await page.locator('#confirm').waitFor({ state: 'visible' });
    assert.equal(await page.locator('#confirm-name').textContent(), evil);
    await page.screenshot({ path: shot('confirm') });
    await page.locator('#confirm-cancel').click();
    assert.equal(await request(base, { path: '/api/locks' }).then((r) => r.body.includes(tag)), true,
      'cancel keeps the lock');
    await row.locator('button.release').click();
    await page.locator('#confirm-ok').click();
    // The token has no name of its own (SQLOCK_ADMIN_TOKEN=SECRET): the actor is "admin".
    await page.locator('#notice', { hasText: / as admin\.$/ }).waitFor({ timeout: DEADLINE_MS });
    let timer;
    const code = await Promise.race([holders[1].exited,
      new Promise((r) => { timer = setTimeout(() => r('still running'), DEADLINE_MS); })]);
    clearTimeout(timer);
    assert.equal(code, 70, 'the holder saw the loss');
    assert.deepEqual(dialogs, [], 'no native dialog fired');
  });

  await t.test('the audit trail shows the forced release and the token\'s name', async () => {
    // Both stores here keep a trail (SQLite from schema version 3, PostgreSQL).
    const row = page.locator('#event-rows tr', { hasText: tag }).first();
    await row.waitFor({ timeout: DEADLINE_MS });
    const text = await row.innerText();
    assert.match(text, /force_release/);
    // The actor is the token's name ("admin"; on PostgreSQL beside the role: "admin (role …)").
    assert.match(text, /(^|\s)admin(\s|$)/, 'the token\'s name is the actor: ' + text);
    assert.ok(text.includes(evil), 'the name is shown verbatim: ' + text);
    assert.equal(await page.locator('#event-rows img').count(), 0, 'no <img> element in the trail');
    await page.screenshot({ path: shot('events'), fullPage: true });
  });

  await t.test('a request without the token is refused', async () => {
    const r = await request(base, { method: 'POST', path: '/api/release',
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: plain }) });
    assert.equal(r.status, 401);
    const inPage = await page.evaluate(async (n) => (await fetch('api/release', { method: 'POST',
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: n }) })).status, plain);
    assert.equal(inPage, 401);
  });

  await t.test('a rebinding Host is refused', async () => {
    const port = new URL(base).port;
    const r = await request(base, { path: '/api/locks', headers: { Host: `evil.example:${port}` } });
    assert.ok([403, 421].includes(r.status), 'status ' + r.status);
    const post = await request(base, { method: 'POST', path: '/api/release',
      headers: { Host: `evil.example:${port}`, Origin: `http://evil.example:${port}`,
        Authorization: 'Bearer ' + token }, body: JSON.stringify({ name: plain }) });
    assert.ok([403, 421].includes(post.status), 'status ' + post.status);
    assert.ok(!server.log().includes(token), 'the token never appears in the log');
  });

  if (proxy) {
    await t.test('a store that does not answer shows as down', async () => {
      proxy.stop();
      await page.locator('#banner', { hasText: 'Store unavailable' }).waitFor({ timeout: DEADLINE_MS });
      await page.screenshot({ path: shot('store-down'), fullPage: true });
      const health = await request(base, { path: '/healthz' });
      assert.equal(health.status, 503);
      const r = await request(base, { method: 'POST', path: '/api/release',
        headers: { Authorization: 'Bearer ' + token }, body: JSON.stringify({ name: plain }) });
      assert.equal(r.status, 503, 'a release while the store is down answers 503: ' + r.body);
    });
  }
}

test('SQLite', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sqlock-browser-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  await suite(t, 'sqlite', 'sqlite:' + path.join(dir, 'locks.db'));
});

// 10,000 locks: copies of a live hold's row in the SQLite file (same boot id and clock),
// expiring 10 minutes later. The page shows 100 of them, sorted and paged by the server.
test('SQLite, 10,000 locks', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sqlock-browser-'));
  const db = path.join(dir, 'locks.db');
  const seed = holder('sqlite:' + db, 'seed');
  const server = serve('sqlite:' + db, 'unused-token');
  const browser = await launch();
  t.after(async () => {
    await browser.cleanup();
    seed.proc.kill('SIGTERM');
    server.proc.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const base = await server.base;
  await until('the seed hold', async () => (await request(base, { path: '/api/locks' })).body.includes('"seed"'));
  const py = spawnSync('python3', ['-c', `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=10)
c.execute("""WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
  INSERT INTO sqlock_locks (name, owner, fence, boot_id, acquired_ms, expires_ms, acquired_at, mode, holder)
  SELECT 'bulk:' || i, 'owner-' || i, i * 7, boot_id, acquired_ms, expires_ms + 600000, acquired_at, mode, 'bulk'
    FROM n, sqlock_locks WHERE name = 'seed'""")
c.commit()`, db], { encoding: 'utf8' });
  assert.equal(py.status, 0, py.stderr);
  const page = await browser.context.newPage();
  await page.goto(base);
  await page.locator('#count', { hasText: '10001 locks held' }).waitFor({ timeout: DEADLINE_MS });
  assert.equal(await page.locator('#rows tr').count(), 100, 'one page of 100 rows');
  assert.match(await page.locator('#page-range').innerText(), /^1\u2013100 of 10001$/);
  const names = await page.locator('#rows td.name').allTextContents();
  assert.deepEqual(names.slice(0, 3), ['bulk:1', 'bulk:2', 'bulk:3'], 'names in natural order');
  await page.locator('#page-next').click();
  await page.locator('#page-range', { hasText: '101\u2013200 of 10001' }).waitFor({ timeout: DEADLINE_MS });
  await page.locator('th[data-key="fence"]').click();
  await page.locator('th[data-key="fence"]').click();  // descending
  await page.locator('#page-range', { hasText: '1\u2013100 of 10001' }).waitFor({ timeout: DEADLINE_MS });
  await until('fences sorted as numbers', async () => {
    const f = await page.locator('#rows td.fence').allTextContents();
    return f[0] === '70000' && f[1] === '69993';
  });
  await page.screenshot({ path: path.join(artifacts, 'sqlite-10000-locks.png') });
});

// The PostgreSQL URL of a test, its schema migrated; null when the test is skipped (a build
// without the backend, or the URL unset outside SQLOCK_TEST_REQUIRE_ALL=1).
function migratedPostgres(t) {
  const url = process.env.SQLOCK_TEST_POSTGRES_URL;
  if (process.env.SQLOCK_BROWSER_POSTGRES !== '1') {
    t.skip('this sqlock was built without the PostgreSQL backend');
    return null;
  }
  if (!url) {
    assert.notEqual(process.env.SQLOCK_TEST_REQUIRE_ALL, '1', 'SQLOCK_TEST_POSTGRES_URL is unset');
    t.skip('SQLOCK_TEST_POSTGRES_URL is unset');
    return null;
  }
  // The schema this build needs: on fresh servers this test may run before any other has
  // migrated the database (migrations are serialized, so running beside another is safe).
  const migrated = spawnSync(sqlock, ['migrate', '--url', url], { encoding: 'utf8' });
  assert.equal(migrated.status, 0, 'sqlock migrate: ' + migrated.stderr);
  return url;
}

test('PostgreSQL', async (t) => {
  const url = migratedPostgres(t);
  if (url) await suite(t, 'postgresql', url, { downViaRelay: true });
});

// A `sqlock run` waiting for a held lock shows on the page: the lock's Waiting count, and in
// the waiting section its kind, since when and holder text, with its position where the store
// queues its waiters (`queued`); it leaves once it is granted.
async function waitingRun(t, label, url, { queued }) {
  const tag = randomBytes(4).toString('hex');
  const name = `browser-queue-${tag}`;
  const first = holder(url, name);
  const server = serve(url, 'unused-token');
  const browser = await launch();
  const procs = [first.proc, server.proc];
  t.after(async () => {
    await browser.cleanup();
    for (const p of procs) p.kill('SIGTERM');
  });
  const base = await server.base;
  await until('the first hold', async () =>
    (await request(base, { path: '/api/locks?prefix=' + name })).body.includes(name));
  const waiter = spawn(sqlock, ['run', '--url', url, '--wait', '20s', '--holder', `waiter-${tag}`,
    name, '--', 'true'], { stdio: 'ignore' });
  procs.push(waiter);
  const waiterExit = new Promise((resolve) => waiter.on('exit', (code) => resolve(code)));
  const page = await browser.context.newPage();
  await page.goto(base);
  await page.locator('#prefix').fill(name);  // other tests' locks stay out of view
  const row = page.locator('#rows tr', { hasText: name });
  await row.locator('td.waiting', { hasText: '1' }).waitFor({ timeout: DEADLINE_MS });
  await row.click();
  const waiting = page.locator('#waiting-rows tr', { hasText: `waiter-${tag}` });
  await waiting.waitFor({ timeout: DEADLINE_MS });
  const cells = await waiting.locator('td').allTextContents();
  assert.equal(cells[0], name);
  assert.equal(cells[1], queued ? '1' : '', queued ? 'first in line' : 'no queue order');
  assert.equal(cells[2], 'exclusive');
  assert.match(cells[3], /^\d{4}-\d\d-\d\dT/, 'since when, from the store');
  assert.match(await page.locator('#waiting-scope').innerText(),
    queued ? /in queue order/ : /keeps no queue order/);
  assert.match(await page.locator('#details').innerText(), /waiting\s+1/);
  await page.screenshot({ path: path.join(artifacts, `${label}-waiting.png`), fullPage: true });
  first.proc.kill('SIGTERM');  // the waiter is granted, runs `true` and exits 0
  let timer;
  const code = await Promise.race([waiterExit,
    new Promise((r) => { timer = setTimeout(() => r('still waiting'), DEADLINE_MS); })]);
  clearTimeout(timer);
  assert.equal(code, 0, 'the waiter ran once granted');
  await page.locator('#no-waiting').waitFor({ state: 'visible', timeout: DEADLINE_MS });
  assert.equal(await page.locator('#waiting-rows tr').count(), 0);
}

test('ZooKeeper, a waiting sqlock run', async (t) => {
  const url = process.env.SQLOCK_TEST_ZOOKEEPER_URL;
  if (process.env.SQLOCK_BROWSER_ZOOKEEPER !== '1') {
    t.skip('this sqlock was built without the ZooKeeper backend');
    return;
  }
  if (!url) {
    assert.notEqual(process.env.SQLOCK_TEST_REQUIRE_ALL, '1', 'SQLOCK_TEST_ZOOKEEPER_URL is unset');
    t.skip('SQLOCK_TEST_ZOOKEEPER_URL is unset');
    return;
  }
  await waitingRun(t, 'zookeeper', url, { queued: true });
});

test('PostgreSQL, a waiting sqlock run', async (t) => {
  const url = migratedPostgres(t);
  if (url) await waitingRun(t, 'postgresql', url, { queued: false });
});
