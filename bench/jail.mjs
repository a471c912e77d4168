/**
 * What the jail costs a tool call: `bash -c true` run as the bash tool runs it, jailed (the default)
 * and unjailed (AGENTQ_SANDBOX=none), against the raw references in the same run: execa alone, and a
 * bare `bwrap --unshare-all` around the same command. The variants alternate, round after round, so
 * the machine's noise falls on all of them alike; medians and ratios are printed.
 *
 *   node bench/jail.mjs [--rounds 200] [--egress]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { execa } from 'execa';
import { bashTool, chooseIsolation, findBwrap } from '@agentq/tools';
import { percentile } from './harness.mjs';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '200' }, egress: { type: 'boolean', default: false } } });
const rounds = Number(values.rounds);
const root = mkdtempSync(path.join(tmpdir(), 'agentq-bench-jail-'));
const limits = { processes: 128, memoryMb: 1024, fileMb: 512, cpuSeconds: 60 };
const jail = await chooseIsolation({ mode: 'bwrap', workRoot: root, jail: { network: 'none', limits } });
const egress = values.egress ? await chooseIsolation({ mode: 'bwrap', workRoot: root, jail: { network: 'egress', limits } }) : undefined;
const workdir = path.join(root, 'task');
await jail.jail.prepareWorkdir(workdir);
const bwrap = findBwrap();
const signal = new AbortController().signal;
const context = (isolation) => ({ workdir, signal, timeoutMs: 10_000, outputLimit: 20_000, isolation });
const bareBwrap = ['--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--unshare-all', '--die-with-parent', '--', '/bin/bash', '-c', 'true'];

const variants = {
  'execa bash -c true': () => execa('/bin/bash', ['-c', 'true']),
  'bare bwrap --unshare-all': () => execa(bwrap, bareBwrap),
  'bash tool, no jail': () => bashTool.run({ command: 'true' }, context({ kind: 'none' })),
  'bash tool, jailed': () => bashTool.run({ command: 'true' }, context(jail)),
  ...(egress ? { 'bash tool, jailed, egress': () => bashTool.run({ command: 'true' }, context(egress)) } : {}),
};
const times = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
for (let round = 0; round < rounds + 10; round++) {
  for (const [name, run] of Object.entries(variants)) {
    const started = performance.now();
    await run();
    if (round >= 10) times[name].push(performance.now() - started);
  }
}
rmSync(root, { recursive: true, force: true });

const median = (name) => percentile(times[name], 50);
const raw = median('execa bash -c true');
const bare = median('bare bwrap --unshare-all');
console.log(`${rounds} rounds, alternating; milliseconds per call`);
console.log(`${'variant'.padEnd(28)} ${'p50'.padStart(7)} ${'p90'.padStart(7)}  vs execa`);
for (const name of Object.keys(variants)) {
  console.log(`${name.padEnd(28)} ${median(name).toFixed(2).padStart(7)} ${percentile(times[name], 90).toFixed(2).padStart(7)}  ${(median(name) / raw).toFixed(2)}x`);
}
console.log(`jail overhead over a bare bwrap: ${(median('bash tool, jailed') - bare).toFixed(2)} ms (p50); unjailed tool over execa: ${(median('bash tool, no jail') / raw).toFixed(2)}x`);
