import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { HomeLease, LEASE_MS, removeStaleHomes } from './worker-homes.js';

let root: string;
const leases: HomeLease[] = [];
afterEach(() => {
  for (const lease of leases.splice(0)) lease.close();
  rmSync(root, { recursive: true, force: true });
});

/** A HOME with a file in it, as a server leaves it. */
function makeHome(home: string): string {
  const dir = path.join(root, 'worker', home);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'cache'), home);
  return dir;
}

function leaseOf(worker: string): HomeLease {
  const lease = new HomeLease({ root, worker });
  leases.push(lease);
  return lease;
}

it('removes the HOMEs the configuration does not name, and the folders of agents and tenants it left', async () => {
  root = mkdtempSync(path.join(tmpdir(), 'agentq-homes-'));
  const kept = makeHome('notes/acme/files');
  for (const home of ['notes/globex/files', 'notes/acme/gone', 'retired/acme/files']) makeHome(home);
  const removed = await removeStaleHomes({
    root,
    kept: new Set(['notes/acme/files', 'notes/initech/files']),
    lease: leaseOf('this'),
  });
  expect(removed.sort()).toEqual(['notes/acme/gone', 'notes/globex/files', 'retired/acme/files']);
  expect(readdirSync(path.join(root, 'worker'))).toEqual(['notes']);
  expect(readdirSync(path.join(root, 'worker', 'notes'))).toEqual(['acme']);
  expect(existsSync(path.join(kept, 'cache'))).toBe(true);
});

it("never removes a HOME a live lease names, this worker's or another's; a stale lease holds nothing", async () => {
  root = mkdtempSync(path.join(tmpdir(), 'agentq-homes-'));
  const mine = makeHome('notes/globex/files');
  const theirs = makeHome('notes/initech/files');
  const orphan = makeHome('notes/umbrella/files');
  const lease = leaseOf('this');
  lease.hold('notes/globex/files');
  // Other workers of the data folder: one runs, one died long ago (its lease not renewed).
  leaseOf('other').hold('notes/initech/files');
  leaseOf('dead').hold('notes/umbrella/files');
  const dead = path.join(root, 'in-use', 'dead');
  const old = new Date(Date.now() - 2 * LEASE_MS);
  utimesSync(dead, old, old);
  const removed = await removeStaleHomes({ root, kept: new Set(), lease });
  expect(removed).toEqual(['notes/umbrella/files']);
  expect(existsSync(path.join(mine, 'cache'))).toBe(true);
  expect(existsSync(path.join(theirs, 'cache'))).toBe(true);
  expect(existsSync(orphan)).toBe(false);
  expect(existsSync(dead)).toBe(false);
  // A lease ended (its worker closed) holds nothing any more.
  lease.close();
  expect(await removeStaleHomes({ root, kept: new Set(), lease })).toEqual(['notes/globex/files']);
});
