/**
 * What bubblewrap reports about a jail it started (`--info-fd`): the jail's first process and its PID
 * namespace. With them a jail is ended for sure: every process in the namespace gets SIGKILL, whatever
 * session it made for itself and whether or not its parent's death reached it.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import type { Readable } from 'node:stream';

export interface JailInfo {
  /** The jail's first process, as this host numbers it. */
  childPid: number;
  /** The inode of its PID namespace. */
  pidNamespace: number;
}

/** Reads bubblewrap's report from its info pipe; undefined when the pipe closes without one. */
export function readJailInfo(pipe: Readable): Promise<JailInfo | undefined> {
  return new Promise((resolve) => {
    let text = '';
    pipe.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const pid = /"child-pid":\s*(\d+)/.exec(text);
      const namespace = /"pid-namespace":\s*(\d+)/.exec(text);
      if (pid && namespace) resolve({ childPid: Number(pid[1]), pidNamespace: Number(namespace[1]) });
    });
    pipe.once('close', () => resolve(undefined));
    pipe.once('error', () => resolve(undefined));
  });
}

/**
 * SIGKILLs every process of a PID namespace (found by its inode, so a reused pid is never hit). The
 * first one's death alone would end the rest, but a process may be in the middle of joining.
 */
export function killPidNamespace(pidNamespace: number): void {
  const wanted = `pid:[${pidNamespace}]`;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/pid`) === wanted) process.kill(Number(entry), 'SIGKILL');
    } catch {
      // Gone already, or not ours to see.
    }
  }
}
