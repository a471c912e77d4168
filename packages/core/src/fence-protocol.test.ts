/** The code-fence protocol, through the real loop with a scripted model and real tool processes. */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createScriptedModel, type ScriptStep } from '@agentq/llm';
import type { MemoryEntry, UserMessage } from '@agentq/protocol';
import { BUILTIN_TOOLS } from '@agentq/contract';
import { builtinTools, createToolSettings } from '@agentq/tools';
import { fenceProtocol } from './fence-protocol.js';
import { createMemoryJournal } from './journal.js';
import { runAgent } from './run-agent.js';

let workdir: string;
beforeEach(async () => {
  workdir = await mkdtemp(path.join(tmpdir(), 'agentq-fences-'));
});
afterEach(async () => {
  await rm(workdir, { recursive: true, force: true });
});

async function run(script: ScriptStep[], options: { toolTimeoutMs?: number; maxToolCallsPerStep?: number } = {}) {
  const { toolTimeoutMs, ...rest } = options;
  const model = createScriptedModel({ script });
  const journal = createMemoryJournal();
  const outcome = await runAgent({
    model,
    tools: builtinTools(BUILTIN_TOOLS),
    protocol: fenceProtocol,
    journal,
    systemPrompt: 'sys',
    prompt: 'goal',
    toolContext: createToolSettings({ workdir, isolation: { kind: 'none' }, timeoutMs: toolTimeoutMs }),
    maxSteps: 10,
    signal: new AbortController().signal,
    ...rest,
  });
  const feedback = journal.messages
    .filter((entry): entry is UserMessage => entry.role === 'user' && entry._feedback === true)
    .map((entry) => entry.content);
  return { outcome, journal, model, feedback };
}

const fence = (tag: string, code: string) => `\`\`\`${tag}\n${code}\n\`\`\``;

describe('the fences protocol', () => {
  it('offers no native tools and runs blocks in order, reporting every block in one user message', async () => {
    const { outcome, feedback, model, journal } = await run([
      {
        content: `First:\n${fence('bash', 'echo one > order.txt')}\nThen:\n${fence('python', 'print(open("order.txt").read().strip() + " two")')}\n${fence('sh', 'echo three')}`,
      },
      { content: 'All done.' },
    ]);
    expect(outcome).toMatchObject({ status: 'completed', answer: 'All done.' });
    expect(model.requests[0]!.tools).toEqual([]);
    expect(feedback).toHaveLength(1);
    expect(feedback[0]).toBe(
      '[success] block 1 (```bash):\n(no output)\n\n[success] block 2 (```python):\none two\n\n[success] block 3 (```sh):\nthree\n\nAll blocks ran.',
    );
    // The model sees the feedback as a user message, without internal fields.
    expect(model.requests[1]!.messages.at(-1)).toEqual({ role: 'user', content: feedback[0] });
    // Both protocols share the same events.
    expect(journal.events.filter((event) => event.type === 'tool.call').map((event) => event.data.name)).toEqual([
      'bash',
      'python',
      'bash',
    ]);
  });

  it('stops the remaining blocks after the first failure', async () => {
    const { feedback } = await run([
      {
        content: `${fence('bash', 'echo ran')}\n${fence('python', 'raise SystemExit(3)')}\n${fence('bash', 'echo never > never.txt')}`,
      },
      { content: 'ok' },
    ]);
    expect(feedback[0]).toMatch(
      /^\[success\] block 1 \(```bash\):\nran\n\n\[failure\] block 2 \(```python\):\n\(no output\)\n\[exit status 3\]\n\n\[not run\] block 3 \(```bash\): not run, an earlier block failed\.\n\nFix the failing block/,
    );
    await expect(readFile(path.join(workdir, 'never.txt'))).rejects.toThrow();
  });

  it('runs at most its cap of blocks from one answer, and says which did not run', async () => {
    const { feedback } = await run(
      [{ content: [1, 2, 3].map((n) => fence('bash', `echo ${n} >> ran.txt`)).join('\n') }, { content: 'ok' }],
      { maxToolCallsPerStep: 2 },
    );
    expect(await readFile(path.join(workdir, 'ran.txt'), 'utf8')).toBe('1\n2\n');
    expect(feedback[0]).toBe(
      '[success] block 1 (```bash):\n(no output)\n\n[success] block 2 (```bash):\n(no output)\n\n' +
        '[not run] block 3 (```bash): not run: one answer runs at most 2 tool calls, and this was call 3 of 3. Call it again in your next answer if it is still needed.\n\n' +
        'Send the blocks that did not run again if they are still needed.',
    );
  });

  it('judges success by exit status, never by words in the output', async () => {
    const { feedback } = await run([
      {
        content: `${fence('python', 'print("0 failed, error: file missing.csv not found")')}\n${fence('bash', 'echo "all tests passed"; exit 3')}`,
      },
      { content: 'ok' },
    ]);
    expect(feedback[0]).toMatch(
      /^\[success\] block 1 \(```python\):\n0 failed, error: file missing\.csv not found\n\n\[failure\] block 2 \(```bash\):\nall tests passed\n/,
    );
  });

  it('fails a block that outlives its timeout', async () => {
    // Only a block that runs can outlive its timeout: a short one, for a block that never ends, is
    // met however slowly the machine starts the process.
    const { feedback } = await run([{ content: fence('bash', 'sleep 600') }, { content: 'ok' }], {
      toolTimeoutMs: 300,
    });
    expect(feedback[0]).toMatch(/^\[failure\] block 1 \(```bash\):\n\(no output\)\n\[timed out after 300 ms/);
  });

  it('never runs fences with other tags: they are prose, and the message is the final answer', async () => {
    const answer = `Here is an example:\n${fence('typescript', 'console.log(1)')}\n${fence('cpp', 'int main() {}')}\n${fence('json', '{"a": 1}')}`;
    const { outcome, journal } = await run([{ content: answer }]);
    expect(outcome).toMatchObject({ status: 'completed', answer });
    expect(journal.events.some((event) => event.type === 'tool.call')).toBe(false);
  });

  it('runs javascript blocks with node, matching the tag exactly (javascript is a node alias, not java)', async () => {
    const tools = builtinTools(BUILTIN_TOOLS);
    const { feedback } = await run([
      { content: fence('javascript', 'console.log([1, 2].map((n) => n * 2).join(","))') },
      { content: 'ok' },
    ]);
    expect(tools.some((tool) => tool.fence?.tags.includes('java'))).toBe(false);
    expect(feedback[0]).toMatch(/^\[success\] block 1 \(```javascript\):\n2,4/);
  });

  it('saves a block under the path of its own fence line, and runs it', async () => {
    const { feedback } = await run([
      {
        content: `${fence('python:hello.py', 'print("hello from", __name__)')}\n${fence('python:lib/other.py', 'x = {"a": 1}\nprint(x["a"])')}\n${fence('file:notes/todo.md', 'remember: colons in code are not paths')}`,
      },
      { content: 'ok' },
    ]);
    expect(await readFile(path.join(workdir, 'hello.py'), 'utf8')).toBe('print("hello from", __name__)');
    expect(await readFile(path.join(workdir, 'lib/other.py'), 'utf8')).toBe('x = {"a": 1}\nprint(x["a"])');
    expect(await readFile(path.join(workdir, 'notes/todo.md'), 'utf8')).toBe(
      'remember: colons in code are not paths\n',
    );
    expect(feedback[0]).toMatch(/block 1 \(```python:hello\.py\):\n\(saved as hello\.py\)\nhello from __main__/);
  });

  it('refuses a save path outside the work directory, with where files may go', async () => {
    const { feedback } = await run([{ content: fence('python:../escape.py', 'print(1)') }, { content: 'ok' }]);
    expect(feedback[0]).toMatch(
      /\[failure\] block 1 .*:\nRefused: "\.\.\/escape\.py" is outside the task's work directory/,
    );
  });

  it('runs blocks nested in a list, de-indented by their fence', async () => {
    const content = 'Steps:\n1. Compute:\n\n   ```python\n   for i in range(2):\n       print(i)\n   ```\n';
    const { feedback } = await run([{ content }, { content: 'ok' }]);
    expect(feedback[0]).toMatch(/^\[success\] block 1 \(```python\):\n0\n1/);
  });

  it('never runs an unclosed fence and tells the model which block was not closed', async () => {
    const { feedback, journal } = await run([
      { content: `${fence('bash', 'echo closed')}\n\`\`\`python\nprint("cut off")` },
      { content: 'ok' },
    ]);
    expect(feedback[0]).toBe(
      'Nothing was run: the ```python block at line 4 was never closed. Close every code block with a line of three backticks (```) and send the blocks again.',
    );
    expect(journal.events.some((event) => event.type === 'tool.call')).toBe(false);
  });

  it('never runs or stores <think> reasoning, and keeps it as a reasoning event', async () => {
    const { journal, feedback } = await run([
      { content: `<think>maybe ${fence('bash', 'touch thought.txt')}</think>Running:\n${fence('bash', 'echo acted')}` },
      { content: '<think>it worked\n```bash\ntouch unclosed.txt\n```' },
      { content: 'Finished.' },
    ]);
    await expect(readFile(path.join(workdir, 'thought.txt'))).rejects.toThrow();
    await expect(readFile(path.join(workdir, 'unclosed.txt'))).rejects.toThrow();
    expect(feedback[0]).toMatch(/acted/);
    const stored = JSON.stringify(journal.messages);
    expect(stored).not.toContain('maybe');
    expect(stored).not.toContain('it worked');
    expect(journal.events.filter((event) => event.type === 'reasoning').map((event) => event.data.text)).toEqual([
      'maybe ```bash\ntouch thought.txt\n```',
      'it worked\n```bash\ntouch unclosed.txt\n```',
    ]);
  });

  it('runs a bash block that runs other code, never skipping it', async () => {
    const { feedback } = await run([
      { content: `${fence('python:calc.py', 'print(6 * 7)')}\n${fence('bash', 'python3 calc.py')}` },
      { content: 'ok' },
    ]);
    expect(feedback[0]).toMatch(/\[success\] block 2 \(```bash\):\n42/);
  });

  it('refuses code that waits on a terminal before it runs, with what to do instead', async () => {
    const { feedback } = await run([
      { content: fence('python', 'name = input("name? ")\nprint(name)') },
      { content: 'ok' },
    ]);
    expect(feedback[0]).toMatch(
      /\[failure\] block 1 \(```python\):\nRefused before running: the code uses input\(\), which waits for a terminal.*put the values in variables in the code, and print results to stdout/,
    );
  });

  it('asks the user with an ask_user block and waits', async () => {
    const { outcome, journal } = await run([
      { content: `${fence('bash', 'echo checked')}\n${fence('ask_user', 'Which year?')}` },
    ]);
    expect(outcome).toMatchObject({
      status: 'interrupted',
      interrupt: { kind: 'question', question: 'Which year?', callId: 'fence-1-2' },
    });
    const last = journal.messages.at(-1) as MemoryEntry;
    expect(last).toMatchObject({ role: 'user', _feedback: true });
    expect((last as UserMessage).content).toMatch(
      /\[success\] block 1 \(```bash\):\nchecked\n\n\[success\] block 2 \(```ask_user\):\nasked the user: Which year\?/,
    );
  });
});
