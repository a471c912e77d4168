/**
 * The HOMEs of `scope: worker` servers, `<root>/worker/<agent>/<tenant>/<server>`, are kept across calls
 * and restarts, so they would outlive their tenant, agent or server too: a tenant removed from the
 * configuration would leave its servers' data on disk for good. `removeStaleHomes` removes each HOME the
 * configuration no longer names, never one in use.
 *
 * In use: each worker process lists the HOMEs of the servers it started in a lease of its own,
 * `<root>/in-use/<worker>`, written before it starts one and renewed while it runs; a lease not renewed
 * for LEASE_MS is a worker that is gone. Workers that share the data folder (containers on one volume)
 * read each other's leases, whatever their pid namespaces. A HOME is moved aside before its leases are
 * read: a server that starts meanwhile is either in a lease read after the move (its HOME is put back)
 * or makes a fresh HOME, never one being removed.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { readdir, readFile, rename, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { removeWorkdir } from '../remove-workdir.js';

/** A lease not renewed for this long is a worker that is gone. */
export const LEASE_MS = 90_000;
/** How often a worker renews its lease: well within LEASE_MS, on a loaded machine too. */
const RENEW_MS = 20_000;

/** A HOME as leases and the configuration name it: `<agent>/<tenant>/<server>`. */
export type HomeName = string;

/** The lease of one worker process over the HOMEs of the servers it started. */
export class HomeLease {
  private readonly homes = new Set<HomeName>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: {
      /** The servers' HOMEs' root (AGENTQ_DATA_DIR/mcp). */
      root: string;
      /** This worker, unique among those sharing `root` (its worker id). */
      worker: string;
    },
  ) {}

  /** Adds `home` to the lease, written before this returns: call it before the server's HOME is made. */
  hold(home: HomeName): void {
    if (this.homes.has(home)) return this.write();
    this.homes.add(home);
    this.write();
    this.timer ??= setInterval(() => this.write(), RENEW_MS).unref();
  }

  has(home: HomeName): boolean {
    return this.homes.has(home);
  }

  /** Ends the lease: this worker's servers have ended. */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.homes.size) rmSync(this.file(), { force: true });
    this.homes.clear();
  }

  private write(): void {
    mkdirSync(leasesOf(this.options.root), { recursive: true, mode: 0o700 });
    // Written whole and renamed over the last: a reader never sees half a lease.
    const file = this.file();
    writeFileSync(`${file}.new`, JSON.stringify([...this.homes]), { mode: 0o600 });
    renameSync(`${file}.new`, file);
  }

  private file(): string {
    return path.join(leasesOf(this.options.root), encodeURIComponent(this.options.worker));
  }
}

/**
 * Removes the HOMEs under `<root>/worker` that `kept` does not name, and the folders of agents and
 * tenants left empty, unless a worker's lease (this one's included) names them. Answers what it removed.
 */
export async function removeStaleHomes(options: {
  root: string;
  /** The HOMEs the configuration names: its agents' `scope: worker` servers, for each of its tenants. */
  kept: ReadonlySet<HomeName>;
  lease: HomeLease;
}): Promise<HomeName[]> {
  const workerRoot = path.join(options.root, 'worker');
  const keptPrefixes = new Set([...options.kept].flatMap((home) => prefixesOf(home)));
  const stale: HomeName[] = [];
  for (const agent of await folders(workerRoot))
    for (const tenant of await folders(path.join(workerRoot, agent)))
      for (const server of await folders(path.join(workerRoot, agent, tenant))) {
        const home = `${agent}/${tenant}/${server}`;
        if (!options.kept.has(home) && !options.lease.has(home)) stale.push(home);
      }
  const trash = path.join(options.root, 'removing');
  await removeLeftAside(trash);
  if (!stale.length) return [];
  const leased = await leasedHomes(options.root);
  const removed: HomeName[] = [];
  mkdirSync(trash, { recursive: true, mode: 0o700 });
  for (const home of stale.filter((one) => !leased.has(one))) {
    const place = path.join(workerRoot, home);
    const aside = path.join(trash, randomUUID());
    try {
      await rename(place, aside);
    } catch {
      continue; // another worker's sweep moved it first
    }
    // Read after the move: a server that started before it is named here.
    if (options.lease.has(home) || (await leasedHomes(options.root)).has(home)) {
      // Put back, unless its server made a fresh one meanwhile; a move back that fails leaves it aside,
      // where the next sweeps remove it once a lease's time passed.
      if (!existsSync(place)) await rename(aside, place).catch(() => undefined);
      else await removeWorkdir(aside);
      continue;
    }
    await removeWorkdir(aside);
    removed.push(home);
  }
  // The folders of an agent or a tenant the configuration no longer names, once empty.
  for (const home of removed) {
    const [agent, tenant] = home.split('/') as [string, string];
    if (!keptPrefixes.has(`${agent}/${tenant}`)) {
      // rmdir refuses a folder that still holds a HOME (another server's, in use), or one gone already: kept.
      await rmdir(path.join(workerRoot, agent, tenant)).catch(() => undefined);
    }
    // The same for the agent's folder.
    if (!keptPrefixes.has(agent)) await rmdir(path.join(workerRoot, agent)).catch(() => undefined);
  }
  return removed;
}

/**
 * What a sweep moved aside and did not remove (its worker stopped in between): removed once it is older
 * than a lease, so that no sweep still removing it meets another.
 */
async function removeLeftAside(trash: string): Promise<void> {
  for (const name of await readdir(trash).catch(() => [])) {
    const aside = path.join(trash, name);
    // A move sets its ctime.
    const moved = await stat(aside).then(
      (stats) => stats.ctimeMs,
      () => Date.now(),
    );
    // Another worker's sweep may be removing it too: what one could not remove, the next sweep tries again.
    if (Date.now() - moved > LEASE_MS) await removeWorkdir(aside).catch(() => undefined);
  }
}

/** The HOMEs the live leases name; a lease gone stale (its worker gone) is removed. */
async function leasedHomes(root: string): Promise<Set<HomeName>> {
  const leases = leasesOf(root);
  const homes = new Set<HomeName>();
  for (const name of await readdir(leases).catch(() => [])) {
    if (name.endsWith('.new')) continue;
    const file = path.join(leases, name);
    try {
      if (Date.now() - (await stat(file)).mtimeMs > LEASE_MS) {
        rmSync(file, { force: true });
        continue;
      }
      for (const home of JSON.parse(await readFile(file, 'utf8')) as HomeName[]) homes.add(home);
    } catch {
      // Removed meanwhile (its worker ended): it leases nothing.
    }
  }
  return homes;
}

const leasesOf = (root: string) => path.join(root, 'in-use');

function prefixesOf(home: HomeName): string[] {
  const [agent, tenant] = home.split('/');
  return [agent!, `${agent}/${tenant}`];
}

async function folders(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
}
