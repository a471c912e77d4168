/**
 * The `/etc` a jail sees: a copy, made once per jail configuration, of the few host entries a program
 * needs (DNS, TLS, time zone, alternatives, the linker), with a passwd and group that name only the
 * jail's user and the resolv.conf of its network. One folder, so it is one mount per tool call (each
 * mount costs a tool call about 0.1 ms). Written to a folder any uid can read (a root worker's jails
 * run as other uids); restart the worker to see changes of the host's /etc. And the line that sets a
 * jail's limits.
 */
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The uid and gid a tool sees for itself inside the jail. */
export const JAIL_UID = 1000;

export interface JailLimits {
  /** Processes and threads at once, the whole tool run together. */
  processes: number;
  /**
   * Memory of the whole run in MiB: every process together, shared memory and tmpfs files included
   * (its cgroup); where no cgroup can be had, the data segment of each process only.
   */
  memoryMb: number;
  /** Largest file a process may write, in MiB. */
  fileMb: number;
  /** CPU time of each process, in seconds. */
  cpuSeconds: number;
}

/** The parts of the host's /etc a program needs, and nothing else (never a `private` key folder). */
const ETC_ENTRIES = [
  'alternatives',
  'ssl',
  'ca-certificates',
  'pki',
  'hosts',
  'nsswitch.conf',
  'localtime',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'mime.types',
];

export interface JailFiles {
  /** What is mounted, read-only, as the jail's /etc. */
  etc: string;
  /** The folder that holds it, removed by `removeJailFiles` or when this process exits. */
  folder: string;
}

/** Folders this process wrote, removed when it exits. */
const written = new Set<string>();

/** `network`: `egress` gets slirp4netns's resolver (10.0.2.3); otherwise the host's resolv.conf. */
export function writeJailFiles(options: { network: 'none' | 'egress' }): JailFiles {
  const folder = mkdtempSync(path.join(tmpdir(), 'agentq-jail-'));
  chmodSync(folder, 0o755);
  const etc = path.join(folder, 'etc');
  mkdirSync(etc, { mode: 0o755 });
  chmodSync(etc, 0o755);
  for (const entry of ETC_ENTRIES) {
    if (!existsSync(`/etc/${entry}`)) continue;
    // An entry that is a link (localtime, often) is copied as what it names: its target may be outside.
    // Links inside a folder are kept as links: they point into /usr or this same /etc.
    const source = realpathSync(`/etc/${entry}`);
    if (statSync(source).isFile()) copyFileSync(source, path.join(etc, entry));
    else
      cpSync(source, path.join(etc, entry), {
        recursive: true,
        verbatimSymlinks: true,
        filter: (file) => path.basename(file) !== 'private',
      });
  }
  const write = (name: string, text: string) => {
    const file = path.join(etc, name);
    writeFileSync(file, text, { mode: 0o644 });
    chmodSync(file, 0o644);
  };
  write(
    'passwd',
    `root:x:0:0:root:/root:/usr/sbin/nologin\nagentq:x:${JAIL_UID}:${JAIL_UID}:agentq task:/tmp:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
  );
  write('group', `root:x:0:\nagentq:x:${JAIL_UID}:\nnogroup:x:65534:\n`);
  if (options.network === 'egress') write('resolv.conf', 'nameserver 10.0.2.3\n');
  else if (existsSync('/etc/resolv.conf'))
    copyFileSync(realpathSync('/etc/resolv.conf'), path.join(etc, 'resolv.conf'));
  if (written.size === 0)
    process.once('exit', () => written.forEach((each) => rmSync(each, { recursive: true, force: true })));
  written.add(folder);
  return { etc, folder };
}

/** Removes a jail's files now (a jail that was closed), not at this process's exit. */
export function removeJailFiles(files: JailFiles): void {
  rmSync(files.folder, { recursive: true, force: true });
  written.delete(files.folder);
}

/**
 * The shell line every jailed program starts with: hard limits, which nothing in the jail can raise.
 * It is put in front of the command itself (not in BASH_ENV, which bash skips when its stdin is a
 * socket). The out-of-memory score is set from outside (jail.ts): set from inside, it could be lowered.
 */
export function limitsLine(limits: JailLimits): string {
  // bash counts -d in KiB and -f in blocks of 1 KiB.
  return `ulimit -u ${limits.processes} -d ${limits.memoryMb * 1024} -f ${limits.fileMb * 1024} -t ${limits.cpuSeconds} -c 0 || exit 126; `;
}
