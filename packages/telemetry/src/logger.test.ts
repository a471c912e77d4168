/** The human-readable log: what a model or a tool wrote reaches an operator's terminal inert. */
import { PassThrough } from 'node:stream';
import { expect, it } from 'vitest';
import { createLogger, prettyDestination } from './logger.js';

it('shows the controls and bidi characters of a line’s strings as their escapes, in the message and in every field', () => {
  const out = new PassThrough();
  let text = '';
  out.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const logger = createLogger({ name: 'agentq-test', destination: prettyDestination(out) });
  // A tool's output and a model's answer as they could reach a line: the clipboard (OSC 52), a C1 CSI that
  // clears the screen, DEL, a right-to-left override.
  logger.warn(
    { taskId: 't-1', detail: 'copy\x1b]52;c;aGk=\x07 then \u009b2J clear', tool: 'rm\u202e fdp.exe', del: 'a\u007fb' },
    'task requeued \u202eevil\u009b2J',
  );
  expect(text).toContain('task requeued');
  // eslint-disable-next-line no-control-regex -- looking for what a terminal would act on
  expect(text).not.toMatch(/[\u007f-\u009f\u202a-\u202e\u2066-\u2069]|\x1b\]52|\x07/);
  expect(text).toContain('\\u009b2J clear');
  expect(text).toContain('rm\\u202e fdp.exe');
  expect(text).toContain('a\\u007fb');
  expect(text).toContain('\\u202eevil');
});
