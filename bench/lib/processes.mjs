/**
 * The benchmarked processes: agentq's own (`agentq api`, `agentq worker`, as `npm start` runs them)
 * and the raw references, each a child with an IPC channel and the probe (probe.mjs) loaded.
 */
import { fork } from 'node:child_process';

const AGENTQ_MAIN = new URL('../../apps/cli/dist/main.js', import.meta.url).pathname;
const PROBE = new URL('./probe.mjs', import.meta.url).pathname;

/**
 * Starts a Node program with the probe; resolves once `ready(message)` accepts an IPC message. Its
 * stdout (agentq's log lines) is read from a pipe, as a log collector would, and dropped; the first
 * 64 KiB are kept to say why it died, if it does before it is ready.
 */
export function startProcess({ script, args = [], env, ready, execArgv = [] }) {
  const child = fork(script, args, {
    env: { ...process.env, ...env },
    execArgv: ['--import', PROBE, ...execArgv],
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    if (output.length < 65_536) output += chunk;
  });
  const started = new Promise((resolve, reject) => {
    child.once('exit', (code) =>
      reject(new Error(`${script} ${args.join(' ')} exited with ${code} before it was ready:\n${output}`)),
    );
    child.on('message', (message) => {
      if (ready?.(message)) resolve(message);
    });
  });
  return {
    child,
    started,
    /** CPU time, event-loop delay and peak RSS (see probe.mjs). */
    probe() {
      return request(child, { probe: 'read' }, (message) => message?.probe);
    },
    resetProbe() {
      child.send({ probe: 'reset' });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resolves with the first message of `child` that `pick` returns something for. */
export function waitFor(child, pick) {
  return new Promise((resolve) => {
    const listener = (message) => {
      const picked = pick(message);
      if (picked === undefined) return;
      child.off('message', listener);
      resolve(picked);
    };
    child.on('message', listener);
  });
}

/** Sends `message` and resolves with the first answer `pick` returns something for. */
export function request(child, message, pick) {
  const answer = waitFor(child, pick);
  child.send(message);
  return answer;
}

/** `agentq api` on a free port; resolves with its URL. */
export async function startAgentqApi(env) {
  // BENCH_API_ARGS: Node flags for the API alone, as BENCH_WORKER_ARGS for the worker.
  const execArgv = process.env.BENCH_API_ARGS?.split(' ').filter(Boolean) ?? [];
  // Ready when it says so over IPC (what `agentq start` waits for too), whatever its log level.
  const api = startProcess({
    script: AGENTQ_MAIN,
    args: ['api'],
    env: { PORT: '0', ...env },
    ready: (message) => message?.type === 'ready',
    execArgv,
  });
  const { url } = await api.started;
  return { ...api, url };
}

/** `agentq worker --pools <pools> --concurrency <n>`. */
export async function startAgentqWorker(env, { pools, concurrency }) {
  // BENCH_WORKER_ARGS: Node flags for the worker alone, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
  const execArgv = process.env.BENCH_WORKER_ARGS?.split(' ').filter(Boolean) ?? [];
  const worker = startProcess({
    script: AGENTQ_MAIN,
    args: ['worker', '--pools', pools, '--concurrency', String(concurrency)],
    env,
    ready: (message) => message?.type === 'ready',
    execArgv,
  });
  await worker.started;
  return worker;
}
