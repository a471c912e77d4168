/**
 * What the jail costs a tool call (row B6 of `npm run bench`, with more detail): `bash -c true` as the
 * bash tool runs it, jailed and unjailed, against execa alone and a bare bwrap, alternating; then the
 * same jailed calls, 20 at once, in a process with a 250 MB heap: started by the process itself or by
 * its tool launcher (as a worker does).
 *
 *   npm run bench:jail -- [--quick] [--egress]
 */
import { parseArgs } from 'node:util';
import { measureBusyWorkerTools } from './rows/busy-worker-tools.mjs';
import { measureToolCall } from './rows/tool-call.mjs';

const { values } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, egress: { type: 'boolean', default: false } },
});
const result = await measureToolCall({ quick: values.quick, egress: values.egress });
const names = {
  execa: 'execa bash -c true',
  bwrap: 'bare bwrap --unshare-all',
  tool: 'bash tool, no jail',
  jailed: 'bash tool, jailed',
  egress: 'bash tool, jailed, egress',
};
console.log(`${result.rounds} rounds, alternating; milliseconds per call`);
console.log(`${'variant'.padEnd(28)} ${'p50'.padStart(7)} ${'p90'.padStart(7)}  vs execa`);
for (const [key, name] of Object.entries(names)) {
  if (!result[key]) continue;
  console.log(
    `${name.padEnd(28)} ${result[key].p50.toFixed(2).padStart(7)} ${result[key].p90.toFixed(2).padStart(7)}  ${(result[key].p50 / result.execa.p50).toFixed(2)}x`,
  );
}
console.log(
  `jail over a bare bwrap: ${(result.jailed.p50 - result.bwrap.p50).toFixed(2)} ms (p50); unjailed tool over execa: ${(result.tool.p50 / result.execa.p50).toFixed(2)}x`,
);

const busy = await measureBusyWorkerTools({ quick: values.quick });
console.log(
  `\n${busy.concurrency} jailed calls at once in a process of ${busy.rssMb.toFixed(0)} MB (${busy.calls} calls, ${busy.rounds} rounds each, alternating; medians)`,
);
console.log(`${'started by'.padEnd(28)} ${'calls/s'.padStart(8)} ${'CPU/call'.padStart(9)} ${'loop p99'.padStart(9)}`);
for (const [key, name] of [
  ['here', 'the process itself'],
  ['launcher', 'its tool launcher'],
]) {
  const row = busy[key];
  console.log(
    `${name.padEnd(28)} ${row.rate.toFixed(0).padStart(8)} ${`${row.cpuMs.toFixed(2)} ms`.padStart(9)} ${`${row.loopP99Ms.toFixed(1)} ms`.padStart(9)}`,
  );
}
