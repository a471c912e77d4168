/**
 * `npm run bench:cli`: the CPU a CLI command costs before it does anything, against a bare Node start
 * (`node -e 0`) in the same run, alternating; medians and the ratio. CPU is read from /proc/self/stat
 * (the children's user and system ticks once each ended), so a busy machine lengthens none of it.
 *
 *   npm run bench:cli [-- --runs 15]
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '11' } } });
const MAIN = fileURLToPath(new URL('../apps/cli/dist/main.js', import.meta.url));
const TICK_MS = 10;

/** The CPU (ms) the children that ended so far used, user and system. */
function childrenCpuMs() {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  // After the name: state is field 3, so cutime (16) and cstime (17) are at 13 and 14.
  return (Number(fields[13]) + Number(fields[14])) * TICK_MS;
}

function cpuOf(args) {
  const before = childrenCpuMs();
  const run = spawnSync(process.execPath, args, { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  if (run.error) throw run.error;
  return childrenCpuMs() - before;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const commands = {
  'node -e 0 (reference)': ['-e', '0'],
  'agentq --version': [MAIN, '--version'],
  'agentq list (no API: a refused connection)': [MAIN, 'list', '--url', 'http://127.0.0.1:9'],
  'agentq config check': [MAIN, 'config', 'check'],
};
const samples = Object.fromEntries(Object.keys(commands).map((name) => [name, []]));
for (let run = 0; run < Number(values.runs); run++)
  for (const [name, args] of Object.entries(commands)) samples[name].push(cpuOf(args));
const reference = median(samples['node -e 0 (reference)']);
console.log(`CPU per command, median of ${values.runs} (ms; ratio to a bare node start):`);
for (const [name, cpu] of Object.entries(samples))
  console.log(`  ${name.padEnd(46)} ${String(median(cpu)).padStart(5)} ms  ${(median(cpu) / reference).toFixed(1)}x`);
