/**
 * The jail's seccomp filter: the system calls a task's code never needs and an attacker wants, refused
 * with EPERM, as Docker's default profile refuses them (it allows a list; this denies what that list
 * leaves out and a program of a task could reach): io_uring (whose operations no filter sees),
 * userfaultfd (a race's best friend), the kernel keyring, bpf, perf_event_open, ptrace and reading or
 * writing other processes' memory, kernel modules and kexec, the clock, mounts (old and new API),
 * namespaces (`unshare`, `setns`, a `clone` that asks for one; `clone3`, whose flags a filter cannot
 * read, answers ENOSYS so that libc falls back to `clone`), swap, reboot, quotas, file handles, NUMA
 * policy, the kernel log. Any other architecture's calls (x32 on x86_64, 32-bit ones) are refused whole.
 *
 * A run that starts with its work directory past its disk quota gets a second filter too, `deleteOnly`:
 * every call that makes a name (open with O_CREAT or O_TMPFILE, mkdir, mknod, link, symlink; openat2,
 * whose flags a filter cannot read, answers ENOSYS so that libc falls back) answers EDQUOT ("Disk quota
 * exceeded"), while its files cannot grow either (a file size limit of 0, set by the jail's prelude).
 *
 * bubblewrap applies it just before it runs the program (`--seccomp FD` reads it from a pipe), with
 * no_new_privs set: nothing in the jail can remove it. A classic BPF program, built here: no library.
 */

/** The kernel's seccomp return values and BPF opcodes (linux/seccomp.h, linux/filter.h). */
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const EDQUOT = 122;
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;

/** Offsets in struct seccomp_data: nr, arch, instruction pointer, then six 64-bit arguments. */
const NR = 0;
const ARCH = 4;
const ARG0_LOW = 16;
const ARG_LOW = (index: number) => 16 + index * 8;

/** O_CREAT, and O_TMPFILE's own bit: an open that makes a file. */
const CREATES = 0o100 | 0o20000000;

/** Namespace flags a `clone` may not ask for: NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME. */
const CLONE_NAMESPACES =
  0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080;

interface ArchTable {
  /** AUDIT_ARCH_* of the architecture. */
  audit: number;
  /** Calls at or past this number are another ABI's (x32's bit on x86_64). */
  foreignFrom?: number;
  clone: number;
  clone3: number;
  denied: Record<string, number>;
  /** Calls that make a name, and the opens (by the index of their flags argument). */
  makes: Record<string, number>;
  opens: Array<{ nr: number; flags: number }>;
  openat2: number;
}

/** The same calls by name on each architecture agentq's workers run on (unistd_64.h, asm-generic/unistd.h). */
const TABLES: Partial<Record<NodeJS.Architecture, ArchTable>> = {
  x64: {
    audit: 0xc000003e,
    foreignFrom: 0x40000000,
    clone: 56,
    clone3: 435,
    denied: {
      ptrace: 101,
      syslog: 103,
      uselib: 134,
      ustat: 136,
      sysfs: 139,
      vhangup: 153,
      pivot_root: 155,
      _sysctl: 156,
      chroot: 161,
      acct: 163,
      settimeofday: 164,
      mount: 165,
      umount2: 166,
      swapon: 167,
      swapoff: 168,
      reboot: 169,
      iopl: 172,
      ioperm: 173,
      create_module: 174,
      init_module: 175,
      delete_module: 176,
      get_kernel_syms: 177,
      query_module: 178,
      quotactl: 179,
      nfsservctl: 180,
      lookup_dcookie: 212,
      clock_settime: 227,
      mbind: 237,
      set_mempolicy: 238,
      get_mempolicy: 239,
      add_key: 248,
      request_key: 249,
      keyctl: 250,
      migrate_pages: 256,
      unshare: 272,
      move_pages: 279,
      perf_event_open: 298,
      fanotify_init: 300,
      name_to_handle_at: 303,
      open_by_handle_at: 304,
      clock_adjtime: 305,
      setns: 308,
      process_vm_readv: 310,
      process_vm_writev: 311,
      kcmp: 312,
      finit_module: 313,
      kexec_file_load: 320,
      bpf: 321,
      userfaultfd: 323,
      kexec_load: 246,
      io_uring_setup: 425,
      io_uring_enter: 426,
      io_uring_register: 427,
      open_tree: 428,
      move_mount: 429,
      fsopen: 430,
      fsconfig: 431,
      fsmount: 432,
      fspick: 433,
      pidfd_getfd: 438,
      mount_setattr: 442,
      quotactl_fd: 443,
      memfd_secret: 447,
    },
    makes: {
      creat: 85,
      mkdir: 83,
      mknod: 133,
      link: 86,
      symlink: 88,
      mkdirat: 258,
      mknodat: 259,
      linkat: 265,
      symlinkat: 266,
    },
    opens: [
      { nr: 2, flags: 1 },
      { nr: 257, flags: 2 },
    ],
    openat2: 437,
  },
  arm64: {
    audit: 0xc00000b7,
    clone: 220,
    clone3: 435,
    denied: {
      lookup_dcookie: 18,
      umount2: 39,
      mount: 40,
      pivot_root: 41,
      chroot: 51,
      vhangup: 58,
      quotactl: 60,
      acct: 89,
      unshare: 97,
      kexec_load: 104,
      init_module: 105,
      delete_module: 106,
      clock_settime: 112,
      syslog: 116,
      ptrace: 117,
      reboot: 142,
      settimeofday: 170,
      add_key: 217,
      request_key: 218,
      keyctl: 219,
      swapon: 224,
      swapoff: 225,
      mbind: 235,
      get_mempolicy: 236,
      set_mempolicy: 237,
      migrate_pages: 238,
      move_pages: 239,
      perf_event_open: 241,
      fanotify_init: 262,
      name_to_handle_at: 264,
      open_by_handle_at: 265,
      clock_adjtime: 266,
      setns: 268,
      process_vm_readv: 270,
      process_vm_writev: 271,
      kcmp: 272,
      finit_module: 273,
      bpf: 280,
      userfaultfd: 282,
      kexec_file_load: 294,
      io_uring_setup: 425,
      io_uring_enter: 426,
      io_uring_register: 427,
      open_tree: 428,
      move_mount: 429,
      fsopen: 430,
      fsconfig: 431,
      fsmount: 432,
      fspick: 433,
      pidfd_getfd: 438,
      mount_setattr: 442,
      quotactl_fd: 443,
      memfd_secret: 447,
    },
    makes: { mknodat: 33, mkdirat: 34, symlinkat: 36, linkat: 37 },
    opens: [{ nr: 56, flags: 2 }],
    openat2: 437,
  },
};

/** The names of the calls the filter refuses (for docs and tests). */
export function deniedCalls(arch: NodeJS.Architecture = process.arch): string[] {
  return Object.keys(TABLES[arch]?.denied ?? {}).sort();
}

/**
 * The filter for this machine's architecture (`deleteOnly`: with the calls that make a name refused), as bubblewrap reads it (struct sock_filter, in this
 * machine's byte order); undefined on an architecture without a table (the jail then runs without it,
 * and says so).
 */
export function seccompFilter(options: { deleteOnly?: boolean; arch?: NodeJS.Architecture } = {}): Buffer | undefined {
  const arch = options.arch ?? process.arch;
  const table = TABLES[arch];
  if (!table) return undefined;
  const numbers = Object.values(table.denied);
  // Each instruction: [code, jump if true, jump if false, k]; jumps count the instructions skipped.
  const program: Array<[number, number, number, number]> = [];
  // The tail, in order: ALLOW, ERRNO(EPERM), ERRNO(ENOSYS); jumps are resolved against it.
  type Target = 'eperm' | 'enosys' | 'edquot' | 'allow';
  const body: Array<{ code: number; k: number; onTrue?: Target; onFalse?: Target }> = [
    { code: LD_W_ABS, k: ARCH },
    { code: JEQ_K, k: table.audit, onFalse: 'eperm' },
    { code: LD_W_ABS, k: NR },
    ...(table.foreignFrom !== undefined ? [{ code: JGE_K, k: table.foreignFrom, onTrue: 'eperm' as const }] : []),
    ...numbers.map((nr) => ({ code: JEQ_K, k: nr, onTrue: 'eperm' as const })),
    { code: JEQ_K, k: table.clone3, onTrue: 'enosys' },
  ];
  if (options.deleteOnly) {
    body.push(...Object.values(table.makes).map((nr) => ({ code: JEQ_K, k: nr, onTrue: 'edquot' as const })));
    body.push({ code: JEQ_K, k: table.openat2, onTrue: 'enosys' });
    // Each open: its flags, then back to the call's number for the next test.
    for (const open of table.opens) {
      body.push(
        { code: JEQ_K, k: open.nr, onFalse: 'next3' as Target },
        { code: LD_W_ABS, k: ARG_LOW(open.flags) },
        { code: JSET_K, k: CREATES, onTrue: 'edquot' },
        { code: LD_W_ABS, k: NR },
      );
    }
  }
  body.push(
    { code: JEQ_K, k: table.clone, onFalse: 'allow' },
    { code: LD_W_ABS, k: ARG0_LOW },
    { code: JSET_K, k: CLONE_NAMESPACES, onTrue: 'eperm', onFalse: 'allow' },
  );
  const tail: Record<string, number> = {
    allow: body.length,
    eperm: body.length + 1,
    enosys: body.length + 2,
    edquot: body.length + 3,
  };
  for (const [index, step] of body.entries()) {
    // 'next3': past this open's three tests of its flags, to the next test of the call's number.
    const jump = (target: string | undefined) =>
      target === undefined ? 0 : target === 'next3' ? 3 : tail[target]! - index - 1;
    program.push([step.code, jump(step.onTrue), jump(step.onFalse), step.k]);
  }
  program.push(
    [RET_K, 0, 0, RET_ALLOW],
    [RET_K, 0, 0, RET_ERRNO | EPERM],
    [RET_K, 0, 0, RET_ERRNO | ENOSYS],
    [RET_K, 0, 0, RET_ERRNO | EDQUOT],
  );
  if (program.some(([, onTrue, onFalse]) => onTrue > 255 || onFalse > 255))
    throw new Error('the seccomp filter is too long for its jumps');
  const bytes = Buffer.alloc(program.length * 8);
  for (const [index, [code, onTrue, onFalse, k]] of program.entries()) {
    bytes.writeUInt16LE(code, index * 8);
    bytes.writeUInt8(onTrue, index * 8 + 2);
    bytes.writeUInt8(onFalse, index * 8 + 3);
    bytes.writeUInt32LE(k >>> 0, index * 8 + 4);
  }
  return bytes;
}
