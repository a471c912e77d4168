/**
 * What the contract's SSE reader (packages/contract/src/sse.ts) costs a thread: a worker reads every
 * streamed model answer with it (up to 64 MiB), the client and the CLI every task's events. Two streams
 * of 8, 32 and 64 MiB, cut in 64 KiB chunks as a socket delivers them: one message whose data is the
 * whole stream (a line that spans every chunk), and a model's answer as deltas (many small messages).
 * Prints the median of SSE_RUNS runs (default 5) of each.
 *
 *   npm run build && npm run bench:sse
 */
import { createSseReader } from '@agentq/contract';
import { median } from './lib/stats.mjs';

const MIB = 1024 * 1024;
const CHUNK = 64 * 1024;
const RUNS = Number(process.env.SSE_RUNS ?? 5);

const streams = {
  'one message': (bytes) => `data: ${'x'.repeat(bytes)}\n\n`,
  deltas: (bytes) => {
    const message = `data: {"choices":[{"delta":{"content":"${'y'.repeat(200)}"}}]}\n\n`;
    return message.repeat(Math.ceil(bytes / message.length));
  },
};

/** Milliseconds to read `stream` in chunks, and how many messages came out. */
function read(stream) {
  const chunks = [];
  for (let start = 0; start < stream.length; start += CHUNK) chunks.push(stream.slice(start, start + CHUNK));
  const started = performance.now();
  const reader = createSseReader();
  let messages = 0;
  for (const chunk of chunks) messages += reader.push(chunk).length;
  return { ms: performance.now() - started, messages };
}

console.log(`SSE reader, ${CHUNK / 1024} KiB chunks, median of ${RUNS} runs:`);
for (const [name, make] of Object.entries(streams)) {
  for (const mib of [8, 32, 64]) {
    const stream = make(mib * MIB);
    const samples = [];
    let messages = 0;
    for (let run = 0; run < RUNS; run++) ({ ms: samples[run], messages } = read(stream));
    console.log(
      `  ${name.padEnd(12)} ${String(mib).padStart(2)} MiB: ${median(samples).toFixed(0).padStart(6)} ms (${messages} messages)`,
    );
  }
}
