/** What a jail is made with and what one run in it takes: plain data, which a tool launcher is sent too. */
import type { DiskQuota } from './disk-quota.js';
import type { Interpreters } from './interpreters.js';
import type { JailLimits } from './jail-files.js';

/** The system's program folders: the PATH of a jail's launch, and of the tool launcher. */
export const SYSTEM_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

export type ToolNetwork = 'none' | 'egress';
export type JailProgram = keyof Interpreters;

export interface JailOptions {
  /** `none`: only the jail's own loopback. `egress`: the internet, never this host or private ranges. */
  network: ToolNetwork;
  limits: JailLimits;
  /** More addresses or prefixes the egress network refuses (e.g. Redis's, when it is not private). Default none. */
  deny?: readonly string[];
  /**
   * Paths no mount of the jail may hold (absolute, links followed): the data folder (every task's folder),
   * the configuration's folder and its .env. An interpreter whose folder holds one is not offered. Default none.
   */
  hidden?: readonly string[];
  /** Default: the worker's, resolved once. */
  interpreters?: Interpreters;
  /** Default: /usr/bin/bwrap, else /bin/bwrap. */
  bwrap?: string;
  /**
   * Start the processes from a small launcher process of this one's (tool-launcher.ts), not from this
   * one: a worker's forks would copy its whole heap's page tables, holding its event loop. Default false.
   */
  separateProcess?: boolean;
}

export interface JailRunOptions {
  program: JailProgram;
  /** For bash: the command. */
  command?: string;
  /** For python and node: their arguments. */
  args?: readonly string[];
  /** Written to the program's stdin. */
  input?: string;
  workdir: string;
  timeoutMs: number;
  outputLimit: number;
  signal: AbortSignal;
  /** The work directory's quota (disk-quota.ts). */
  disk?: DiskQuota;
}
