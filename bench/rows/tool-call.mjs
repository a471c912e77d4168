/**
 * B6: `bash -c true` run as the bash tool runs it, unjailed (AGENTQ_SANDBOX=none) and jailed (the
 * default), against the raw references: execa alone, and a bare `bwrap --unshare-all` around the same
 * command. Call -> result, in this process; the tool's calls start from a tool launcher, as a worker's do,
 * with the work directory's disk quota watched.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { bashTool, chooseIsolation, closeIsolation, findBwrap, MAX_WORKDIR_ENTRIES, WorkdirDisk } from '@agentq/tools';
import { alternate, median, percentile } from '../lib/stats.mjs';

export async function measureToolCall({ quick, egress = false }) {
  const rounds = quick ? 60 : 200;
  const root = mkdtempSync(path.join(tmpdir(), 'agentq-bench-jail-'));
  const isolations = [];
  try {
    const limits = { processes: 128, memoryMb: 1024, fileMb: 512, cpuSeconds: 60 };
    // As a worker runs them: from its tool launcher.
    const jail = await chooseIsolation({
      mode: 'bwrap',
      workRoot: root,
      jail: { network: 'none', limits, separateProcess: true },
    });
    const unjailed = await chooseIsolation({
      mode: 'none',
      workRoot: root,
      jail: { network: 'none', limits, separateProcess: true },
    });
    const egressJail = egress
      ? await chooseIsolation({
          mode: 'bwrap',
          workRoot: root,
          jail: { network: 'egress', limits, separateProcess: true },
        })
      : undefined;
    isolations.push(jail, unjailed, egressJail);
    const workdir = path.join(root, 'task');
    await jail.jail.prepareWorkdir(workdir);
    const bwrap = findBwrap();
    const signal = new AbortController().signal;
    // With the work directory's disk quota on, as a worker's tools run by default (AGENTQ_TASK_DISK_MB).
    const disk = new WorkdirDisk(workdir, { bytes: 4096 * 1024 * 1024, entries: MAX_WORKDIR_ENTRIES });
    const context = (isolation) => ({ workdir, signal, timeoutMs: 10_000, outputLimit: 20_000, isolation, disk });
    const bareBwrap = [
      '--ro-bind',
      '/usr',
      '/usr',
      '--symlink',
      'usr/bin',
      '/bin',
      '--symlink',
      'usr/lib',
      '/lib',
      '--symlink',
      'usr/lib64',
      '/lib64',
      '--unshare-all',
      '--die-with-parent',
      '--',
      '/bin/bash',
      '-c',
      'true',
    ];
    const timed = (run) => async () => {
      const started = performance.now();
      await run();
      return performance.now() - started;
    };
    const variants = {
      execa: timed(() => execa('/bin/bash', ['-c', 'true'])),
      bwrap: timed(() => execa(bwrap, bareBwrap)),
      tool: timed(() => bashTool.run({ command: 'true' }, context(unjailed))),
      jailed: timed(() => bashTool.run({ command: 'true' }, context(jail))),
      ...(egressJail ? { egress: timed(() => bashTool.run({ command: 'true' }, context(egressJail))) } : {}),
    };
    await alternate(variants, 10);
    const samples = await alternate(variants, rounds);
    return {
      rounds,
      ...Object.fromEntries(
        Object.entries(samples).map(([name, list]) => [name, { p50: median(list), p90: percentile(list, 90) }]),
      ),
    };
  } finally {
    await Promise.all(isolations.filter(Boolean).map(closeIsolation));
    rmSync(root, { recursive: true, force: true });
  }
}
