// node-redlock (redlock 4 on npm, over ioredis) the C++ tests drive line by line
// (tests/support/peer_process.hpp).
// Usage: node redlock_peer.js HOST:PORT[,HOST:PORT...] NAME. Commands on stdin, one answer
// line each:
//   try        lock(NAME, 30 s) with no retry   -> yes | no
//   wait SECS  lock(NAME, 30 s), retried SECS s -> yes | no
//   release    unlock()                         -> released | not-owned
//   token      the value of the hold            -> its text, or none
'use strict';
const Redis = require('ioredis');
const Redlock = require('redlock');
const readline = require('readline');

const servers = process.argv[2].split(',').map((a) => {
  const [host, port] = a.split(':');
  return new Redis({ host, port: Number(port), lazyConnect: false });
});
const name = process.argv[3];
const redlock = new Redlock(servers, { retryCount: 0, retryDelay: 20, retryJitter: 10 });
let lock = null;

async function run(cmd) {
  if (cmd[0] === 'try' || cmd[0] === 'wait') {
    const retryCount = cmd[0] === 'wait' ? Math.ceil((Number(cmd[1]) * 1000) / 20) : 0;
    try {
      lock = await redlock.lock(name, 30000, { retryCount });
      return 'yes';
    } catch (e) {
      return 'no';
    }
  }
  if (cmd[0] === 'release') {
    if (!lock) return 'not-owned';
    try {
      await lock.unlock();
      return 'released';
    } catch (e) {
      return 'not-owned';
    } finally {
      lock = null;
    }
  }
  if (cmd[0] === 'token') return lock ? lock.value : 'none';
  return 'unknown';
}

const rl = readline.createInterface({ input: process.stdin });
let chain = Promise.resolve();
rl.on('line', (line) => {
  const cmd = line.trim().split(/\s+/);
  if (!cmd[0]) return;
  chain = chain.then(() => run(cmd)).then((a) => process.stdout.write(a + '\n'));
});
rl.on('close', () => chain.then(() => process.exit(0)));
Promise.all(servers.map((s) => s.ping())).then(() => process.stdout.write('ready\n'));
