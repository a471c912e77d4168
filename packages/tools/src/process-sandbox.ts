/**
 * An optional jail for tool processes (bash, python, node), with bubblewrap: the process sees the
 * system read-only, its task's work directory read-write at the same path, an empty /tmp, and none of
 * the rest of the machine (no home directories, no other tasks, no /etc secrets). Without it, file
 * tools are confined by path checks but a shell can still read what the worker's user can read.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';

export type SandboxKind = 'none' | 'bwrap';

/** The parts of /etc a program needs (DNS, TLS, time zone, alternatives), and nothing else. */
const ETC_ENTRIES = ['alternatives', 'ssl', 'ca-certificates', 'resolv.conf', 'hosts', 'nsswitch.conf', 'localtime', 'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d'];

/** Folders outside /usr an interpreter needs (a pyenv Python lives in a home directory). */
let extraRoots: string[] | undefined;

function interpreterRoots(interpreters: readonly string[]): string[] {
  if (extraRoots) return extraRoots;
  const roots = new Set<string>();
  for (const interpreter of interpreters) {
    if (!path.isAbsolute(interpreter)) continue;
    const real = realpathSync(interpreter);
    // The system's own binaries are in /usr (or linked to it), which is bound already.
    if (real.startsWith('/usr/')) continue;
    try {
      // A Python's prefix holds its standard library; another interpreter gets its own folder.
      roots.add(
        path.basename(real).startsWith('python')
          ? execFileSync(real, ['-c', 'import sys; print(sys.base_prefix)'], { encoding: 'utf8' }).trim()
          : path.dirname(real),
      );
    } catch {
      roots.add(path.dirname(real));
    }
  }
  // Never the whole file system, whatever an interpreter's layout.
  extraRoots = [...roots].filter((root) => root !== '/' && root.split('/').length > 2);
  return extraRoots;
}

export function bwrapAvailable(): boolean {
  return existsSync('/usr/bin/bwrap') || existsSync('/bin/bwrap');
}

/** The command that runs `file args` inside the jail, in `workdir`. */
export function sandboxed(options: { file: string; args: readonly string[]; workdir: string; interpreters: readonly string[] }): { file: string; args: string[] } {
  const binds = ['--ro-bind', '/usr', '/usr'];
  for (const link of ['bin', 'lib', 'lib64', 'sbin']) {
    if (existsSync(`/${link}`)) binds.push('--symlink', `usr/${link}`, `/${link}`);
  }
  for (const entry of ETC_ENTRIES) {
    if (existsSync(`/etc/${entry}`)) binds.push('--ro-bind', `/etc/${entry}`, `/etc/${entry}`);
  }
  for (const root of interpreterRoots(options.interpreters)) binds.push('--ro-bind', root, root);
  return {
    file: existsSync('/usr/bin/bwrap') ? '/usr/bin/bwrap' : '/bin/bwrap',
    args: [
      ...binds,
      // Mounts apply in order: the empty /tmp first, so a work directory under /tmp shows on top of it.
      '--tmpfs', '/tmp',
      '--proc', '/proc',
      '--dev', '/dev',
      '--bind', options.workdir, options.workdir,
      '--chdir', options.workdir,
      // Its own process, IPC and host-name namespaces; the network stays (pip, git, curl).
      '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try',
      '--die-with-parent',
      '--',
      options.file,
      ...options.args,
    ],
  };
}
