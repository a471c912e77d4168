/** Starts the model double in its own process (model-server.mjs); resolves with its base URL and IPC. */
import { request, startProcess, waitFor } from './processes.mjs';

const SERVER = new URL('./model-server.mjs', import.meta.url).pathname;

export async function startModel({ latencyMs = 0, script = 'single', announce = false, log = false } = {}) {
  const args = [
    '--latency',
    String(latencyMs),
    '--script',
    script,
    ...(announce ? ['--announce'] : []),
    ...(log ? ['--log'] : []),
  ];
  const model = startProcess({ script: SERVER, args, ready: (message) => message?.ready });
  const { ready: baseURL } = await model.started;
  return {
    ...model,
    baseURL,
    /** When the first request of each prompt arrived (ms since the epoch), null for none yet. */
    arrivals: (prompts) => request(model.child, { arrivals: prompts }, (message) => message?.arrivals),
    count: () => request(model.child, { count: true }, (message) => message?.count),
    /** With `log`: every request so far, as [arrival (ms since the epoch), first user text]. */
    log: () => request(model.child, { log: true }, (message) => message?.log),
    /** With script `delegate`: lets the held children's answers go. */
    release: () => model.child.send({ release: true }),
    /** With `announce`: resolves when the first request of `prompt` arrives (ms since the epoch). */
    arrival: (prompt) => waitFor(model.child, (message) => (message?.arrival === prompt ? message.at : undefined)),
  };
}
