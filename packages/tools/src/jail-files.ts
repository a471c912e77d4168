/**
 * The few files a jail is given in place of the host's: a passwd and group that name only the jail's
 * user, and a resolv.conf for the egress network. Written once per process to a folder any uid can
 * read (a root worker's jails run as other uids). And the line that sets a jail's limits.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The uid and gid a tool sees for itself inside the jail. */
export const JAIL_UID = 1000;

export interface JailLimits {
  /** Processes and threads at once, the whole tool run together. */
  processes: number;
  /** Data segment of each process (heap and anonymous memory), in MiB. */
  memoryMb: number;
  /** Largest file a process may write, in MiB. */
  fileMb: number;
  /** CPU time of each process, in seconds. */
  cpuSeconds: number;
}

export interface JailFiles {
  folder: string;
  passwd: string;
  group: string;
  /** For the egress network: slirp4netns answers DNS at 10.0.2.3. */
  resolvConf: string;
}

/** Folders this process wrote, removed when it exits. */
const written = new Set<string>();

export function writeJailFiles(): JailFiles {
  const folder = mkdtempSync(path.join(tmpdir(), 'agentq-jail-'));
  chmodSync(folder, 0o755);
  const write = (name: string, text: string) => {
    const file = path.join(folder, name);
    writeFileSync(file, text, { mode: 0o644 });
    chmodSync(file, 0o644);
    return file;
  };
  const files: JailFiles = {
    folder,
    passwd: write('passwd', `root:x:0:0:root:/root:/usr/sbin/nologin\nagentq:x:${JAIL_UID}:${JAIL_UID}:agentq task:/tmp:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`),
    group: write('group', `root:x:0:\nagentq:x:${JAIL_UID}:\nnogroup:x:65534:\n`),
    resolvConf: write('resolv.conf', 'nameserver 10.0.2.3\n'),
  };
  if (written.size === 0) process.once('exit', () => written.forEach((each) => rmSync(each, { recursive: true, force: true })));
  written.add(folder);
  return files;
}

/**
 * The shell line every jailed program starts with: hard limits, which nothing in the jail can raise,
 * and the out-of-memory score that makes the kernel kill a tool before anything else. It is put in
 * front of the command itself (not in BASH_ENV, which bash skips when its stdin is a socket).
 */
export function limitsLine(limits: JailLimits): string {
  // bash counts -d in KiB and -f in blocks of 1 KiB.
  return `ulimit -u ${limits.processes} -d ${limits.memoryMb * 1024} -f ${limits.fileMb * 1024} -t ${limits.cpuSeconds} -c 0 || exit 126; echo 1000 >/proc/self/oom_score_adj; `;
}
