/**
 * Who a jailed tool runs as on the host. A worker running as root gives each work directory its own
 * unprivileged uid (from a hash of its path, in a high range no real user has): the kernel counts
 * processes per uid, so one task's fork bomb cannot starve another's, and the kernel exempts uid 0
 * from the process limit altogether. A worker that is not root runs every jail as itself, the only
 * identity it may use.
 */
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';

export interface HostIdentity {
  uid: number;
  gid: number;
}

const ID_BASE = 2_000_000_000;
const ID_RANGE = 100_000_000;

/** The host uid and gid a work directory's tools run as; undefined when the worker is not root (they run as it). */
export function jailIdentity(workdir: string): HostIdentity | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const hash = createHash('sha256').update(path.resolve(workdir)).digest().readUInt32BE(0);
  const id = ID_BASE + (hash % ID_RANGE);
  return { uid: id, gid: id };
}

/**
 * Whether a user that is neither the owner nor in the group can reach a path: every folder on the
 * way searchable, and the path itself readable (and searchable, for a folder). A jail of a root
 * worker runs as such a user, and bubblewrap opens what it binds as that user.
 */
export function reachableByOthers(target: string): boolean {
  const resolved = path.resolve(target);
  try {
    const parts = resolved.split(path.sep).filter(Boolean);
    for (let index = 0; index < parts.length; index++) {
      const current = path.sep + parts.slice(0, index).join(path.sep);
      if ((statSync(current).mode & 0o001) === 0) return false;
    }
    const own = statSync(resolved);
    const needed = own.isDirectory() ? 0o005 : 0o004;
    return (own.mode & needed) === needed;
  } catch {
    return false;
  }
}

/** The first folder, from / down to `target` itself, that others cannot search (for error messages). */
export function firstUnreachable(target: string): string | undefined {
  const parts = path.resolve(target).split(path.sep).filter(Boolean);
  for (let index = 0; index <= parts.length; index++) {
    const current = path.sep + parts.slice(0, index).join(path.sep);
    try {
      if ((statSync(current).mode & 0o001) === 0) return current;
    } catch {
      return current;
    }
  }
  return undefined;
}
