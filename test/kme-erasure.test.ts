// Erasure on disk (docs/storage.md, "Erasure"; docs/post-quantum.md): once a key has been
// retrieved, or a ratchet epoch erased, someone who later holds every file of the site's
// state directory *and* its site key must not get them back. Each site is a real daemon
// process with its own state directory; it is killed with SIGKILL right after the erasure
// (nothing gets to clean up), and then every file there (database, -wal, -shm, journals)
// is searched for every record shaped like a sealed key or ratchet state, and each one
// found is opened with the site key. A record that was not erased must still be found:
// the search itself is checked on the same files.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { EtsiClient, type EtsiKey } from '../src/kme/etsi-client.js';
import { SiteKey } from '../src/kme/site-key.js';
import type { RatchetState } from '../src/pqlink/index.js';
import { KmeTestPki } from './helpers/kme-pki.js';
import { createTestPackage, type TestPackage } from './helpers/package.js';
import { filesUnder, recordsIn, type Column } from './helpers/sqlite-forensics.js';

/** kme_keys: key_id, origin, peer, size, owner, waiting, state, created, expires, digest, key_enc. */
const KEY_ROW: Column[] = ['text', 'text', 'text', 'int', 'text', 'text', 'int', 'int', 'int', 'text', 'blob'];
/** pqlink_state: site, peer, sealed, epoch, updated. */
const STATE_ROW: Column[] = ['text', 'text', 'blob', 'int', 'int'];

interface Daemon {
  child: ChildProcess;
  /** Log lines (JSON) so far. */
  lines: Array<Record<string, unknown>>;
}

const pki = new KmeTestPki('qentropy-kme-erasure-');
let pkg: TestPackage;
const running: Record<string, Daemon> = {};
const clients: EtsiClient[] = [];

/** Each test starts its sites from empty state directories. */
let run = 0;
const stateDir = (id: string): string => path.join(pki.dir, `state-${run}-${id}`);

function configFile(id: string, peer: string, extra: Record<string, unknown>): string {
  const dir = stateDir(id);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const kme = {
    id,
    listen: { host: '127.0.0.1', port: pki.ports[id] },
    tls: { cert: path.join(pki.dir, `kme-${id}.crt`), key: path.join(pki.dir, `kme-${id}.key`), ca: path.join(pki.dir, 'ca.crt') },
    storage: `sqlite:${path.join(dir, 'kme.db')}`,
    siteKeyFile: path.join(dir, 'site.key'),
    seedSource: 'system',
    peers: { [peer]: { url: pki.url(peer) } },
    ...extra,
  };
  return pki.file(`daemon-${id}.json`, JSON.stringify({ stateDir: dir, log: { level: 'debug' }, kme }));
}

/** `qentropy daemon` for one site; resolves once it listens. */
function startDaemon(id: string, peer: string, extra: Record<string, unknown> = {}): Promise<Daemon> {
  const child = spawn(process.execPath, [pkg.cli, 'daemon', '--config', configFile(id, peer, extra)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const daemon: Daemon = { child, lines: [] };
  running[id] = daemon;
  return new Promise((resolve, reject) => {
    let partial = '';
    child.stdout!.on('data', (d) => {
      partial += d;
      const complete = partial.split('\n');
      partial = complete.pop()!;
      for (const line of complete) {
        try {
          daemon.lines.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          daemon.lines.push({ msg: line });
        }
        if (line.includes('kme: listening')) resolve(daemon);
      }
    });
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    child.on('exit', (code) => reject(new Error(`site ${id} exited (${code}): ${err}`)));
  });
}

/** SIGKILL: no shutdown, no last checkpoint; resolves once the process is gone. */
async function kill9(id: string): Promise<void> {
  const d = running[id];
  if (!d) return;
  delete running[id];
  if (d.child.exitCode !== null || d.child.signalCode !== null) return;
  const gone = new Promise((resolve) => d.child.once('exit', resolve));
  d.child.kill('SIGKILL');
  await gone;
}

function etsi(site: string, sae: string): EtsiClient {
  const c = new EtsiClient({ url: pki.url(site), cert: pki.saeCerts[sae]!.certPem, key: pki.saeCerts[sae]!.keyPem, ca: pki.ca.certPem, timeoutMs: 10_000 });
  clients.push(c);
  return c;
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function siteKeyOf(id: string): SiteKey {
  return SiteKey.fromBytes(fs.readFileSync(path.join(stateDir(id), 'site.key')));
}

/** Every key the attacker opens from the site's state directory with its site key, base64. */
function recoverKeys(id: string): Set<string> {
  const siteKey = siteKeyOf(id);
  const found = new Set<string>();
  for (const { bytes } of filesUnder(stateDir(id))) {
    for (const [keyId, origin, peer, , , , , , , , sealed] of recordsIn(bytes, KEY_ROW)) {
      try {
        found.add(siteKey.open(sealed as Buffer, Buffer.from(`${String(keyId)}\n${String(origin)}\n${String(peer)}`, 'utf8')).toString('base64'));
      } catch {
        // Not a sealed key of this site (or not a record at all): the attacker moves on.
      }
    }
  }
  return found;
}

/** Every ratchet state the attacker opens there: the epoch secrets (hex) it holds, by epoch. */
function recoverEpochSecrets(id: string): Map<number, Set<string>> {
  const siteKey = siteKeyOf(id);
  const found = new Map<number, Set<string>>();
  for (const { bytes } of filesUnder(stateDir(id))) {
    for (const [site, peer, sealed] of recordsIn(bytes, STATE_ROW)) {
      let state: RatchetState;
      try {
        const plain = siteKey.open(sealed as Buffer, Buffer.from(`qentropy pqlink state v1\n${String(site)}\n${String(peer)}`, 'utf8'));
        state = JSON.parse(plain.toString('utf8')) as RatchetState;
      } catch {
        continue;
      }
      for (const e of [state.current, state.previous, state.candidate]) {
        if (!e) continue;
        if (!found.has(e.epoch)) found.set(e.epoch, new Set());
        found.get(e.epoch)!.add(e.secret);
      }
    }
  }
  return found;
}

async function ratchetEpoch(site: string, sae: string, peer: string): Promise<number> {
  const { body } = await etsi(site, sae).call('GET', `/api/v1/keys/${peer}/status`);
  return (body as { status_extension: { ratchet: { epoch: number } } }).status_extension.ratchet.epoch;
}

beforeAll(async () => {
  pkg = createTestPackage('kme-erasure');
  await pki.setup(['A', 'B'], { a1: 'A', b1: 'B' });
}, 60_000);

afterEach(async () => {
  run++;
  await Promise.all(clients.splice(0).map((c) => c.close()));
  for (const id of Object.keys(running)) await kill9(id);
});

afterAll(() => {
  pkg?.remove();
  fs.rmSync(pki.dir, { recursive: true, force: true });
});

describe('erasure that holds on disk (SQLite)', () => {
  it('a retrieved key cannot be recovered from the peer site\'s files with its site key, even after a kill -9 right after retrieval', async () => {
    await startDaemon('A', 'B');
    await startDaemon('B', 'A');
    const keys: EtsiKey[] = await etsi('A', 'a1').encKeys('B', { number: 3 });
    const [first, second, kept] = keys as [EtsiKey, EtsiKey, EtsiKey];
    // The first retrieval leaves the second key's row in the database file itself (its page
    // was copied there); the second one then deletes it from that page.
    expect(await etsi('B', 'b1').decKeys('A', [first.key_ID])).toEqual([first]);
    expect(await etsi('B', 'b1').decKeys('A', [second.key_ID])).toEqual([second]);
    await kill9('B');

    const recovered = recoverKeys('B');
    // The search works on these very files: the key nobody retrieved is found and opened ...
    expect(recovered.has(kept.key)).toBe(true);
    // ... and the retrieved ones are nowhere: not in the WAL, not in the free space of the database.
    expect(recovered.has(first.key)).toBe(false);
    expect(recovered.has(second.key)).toBe(false);
  }, 60_000);

  it('an erased ratchet epoch cannot be recovered from either site\'s files with the site key, even after a kill -9 right after the erasure', async () => {
    const extra = { ratchet: { epochKeys: 2 }, peerTimeoutMs: 1000, maintenanceSeconds: 1 };
    await startDaemon('A', 'B', extra);
    await startDaemon('B', 'A', extra);
    await etsi('A', 'a1').encKeys('B');
    const epoch = await ratchetEpoch('A', 'a1', 'B');
    // Before the erasure the attacker does get S(epoch) from A's files: the search works.
    const secrets = recoverEpochSecrets('A').get(epoch);
    expect(secrets?.size).toBe(1);
    const [secret] = [...secrets!];

    // More keys move the link to a new epoch; after the grace period each site erases the old one.
    await etsi('A', 'a1').encKeys('B', { number: 2 });
    await until('a new epoch', async () => (await ratchetEpoch('A', 'a1', 'B')) > epoch);
    await etsi('B', 'b1').encKeys('A');
    const erased = (id: string) => running[id]!.lines.some((l) => l.msg === 'pqlink: previous epoch erased' && l.epoch === epoch);
    await until(`epoch ${epoch} erased at both sites`, () => erased('A') && erased('B'));
    await kill9('A');
    await kill9('B');

    for (const id of ['A', 'B']) {
      const left = recoverEpochSecrets(id);
      expect(left.size).toBeGreaterThan(0); // the newer epochs are there to be found
      expect(left.has(epoch)).toBe(false);
      expect([...left.values()].some((s) => s.has(secret!))).toBe(false);
      for (const { file, bytes } of filesUnder(stateDir(id))) {
        expect(bytes.includes(Buffer.from(secret!, 'hex')), file).toBe(false);
      }
    }
  }, 90_000);
});
