/**
 * The tool launcher (tool-launcher.ts): a small process a worker starts, which runs the tool processes
 * the worker asks for over its IPC channel (in its jail, or unjailed when the worker opted out), so
 * their forks copy this small process and not the worker. It lives as long as its channel: when the
 * worker ends (SIGKILL included), it kills what it runs and exits. A terminal's Ctrl-C or a service manager's SIGTERM is for the worker, which may
 * still finish its running tasks; they do not stop the launcher.
 */
import { rmSync } from 'node:fs';
import { ToolError } from './errors.js';
import { Jail } from './jail.js';
import { runProcess } from './run-process.js';
import type { FromLauncher, ToLauncher } from './tool-launcher.js';

const runs = new Map<number, { controller: AbortController; done: Promise<void> }>();
let ready = false;
let jail: Jail | undefined;

function send(message: FromLauncher): void {
  if (process.connected) process.send!(message);
}

process.on('message', (message: ToLauncher) => {
  switch (message.type) {
    case 'init':
      // Its temporary folder (its TMPDIR), made by its worker, which removes it too if this one was killed.
      process.once('exit', () => rmSync(message.scratch, { recursive: true, force: true }));
      try {
        if (message.jail) jail = new Jail({ ...message.jail, separateProcess: false });
        ready = true;
        send({ type: 'ready' });
      } catch (error) {
        send({ type: 'failed', message: (error as Error).message });
      }
      return;
    case 'abort':
      runs.get(message.id)?.controller.abort();
      return;
    case 'run': {
      const { id, request } = message;
      const controller = new AbortController();
      const running = !ready
        ? undefined
        : 'unjailed' in request
          ? runProcess({ ...request.unjailed, signal: controller.signal })
          : jail?.run({ ...request.jailed, signal: controller.signal });
      if (!running) {
        send({
          type: 'error',
          id,
          code: 'tool_unavailable',
          message: 'the tool launcher was asked to run a process it was not set up for',
        });
        return;
      }
      const done = running
        .then(
          (outcome) => send({ type: 'done', id, outcome }),
          (error: Error) =>
            send({
              type: 'error',
              id,
              message: error.message,
              ...(error instanceof ToolError ? { code: error.code } : {}),
            }),
        )
        .finally(() => runs.delete(id));
      runs.set(id, { controller, done });
    }
  }
});

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => undefined);

process.on('disconnect', () => {
  for (const { controller } of runs.values()) controller.abort();
  // A killed run returns once its process group and PID namespace were signalled.
  void Promise.all([...runs.values()].map(({ done }) => done)).finally(() => process.exit(0));
});
