/** The `agentq` command as a user runs it, against a real API, workers and Redis. */
import type { TaskView } from '@agentq/contract';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tenantSigningSecret } from '@agentq/config';
import type { DoubleRequest } from '@agentq/llm';
import { connectRedis, createKeys } from '@agentq/store';
import { spawn } from 'node:child_process';
import { AGENTQ_MAIN, spawnAgentq } from '../helpers/processes.js';
import { waitForEnd } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';
import { configFile, tenantsEnv } from '../helpers/config-file.js';

let stack: Stack | undefined;
let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(path.join(tmpdir(), 'agentq-cli-'));
});
afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await rm(folder, { recursive: true, force: true });
});

const promptOf = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const hasTool = (request: DoubleRequest) => request.messages.some((message) => message.role === 'tool');
const rules = [
  {
    match: (request: DoubleRequest) => promptOf(request).startsWith('fail'),
    reply: { error: { status: 400, message: 'bad request for this one' } },
  },
  {
    match: (request: DoubleRequest) => promptOf(request).startsWith('slow'),
    reply: { content: 'late', delayMs: 30_000 },
  },
  {
    match: (request: DoubleRequest) => promptOf(request).startsWith('use a tool') && !hasTool(request),
    reply: { toolCalls: [{ name: 'bash', arguments: { command: 'seq 1 20' } }] },
  },
  // A task's output and its model's answer with terminal controls: the clipboard (OSC 52), a cleared screen, a bidi override.
  {
    match: (request: DoubleRequest) => promptOf(request).startsWith('escape') && !hasTool(request),
    reply: {
      toolCalls: [
        { name: 'bash', arguments: { command: "printf 'out\\033]52;c;cHduZWQ=\\007\\033[2J\\r\\nnext\\rover\\n'" } },
      ],
    },
  },
  {
    match: (request: DoubleRequest) => promptOf(request).startsWith('escape'),
    reply: { content: 'done \x1b[1A\x1b[2Kcompleted\u009b31m \u202eevil\r\nend' },
  },
  { reply: (request: DoubleRequest) => ({ content: `answer to: ${promptOf(request)}` }) },
];

async function run(args: string[], options: { input?: string; env?: Record<string, string> } = {}) {
  const agentq = spawnAgentq(
    [...args, '--url', stack!.api.url],
    options.env ?? {},
    options.input === undefined ? {} : { input: options.input },
  );
  const code = await agentq.exited;
  return { code, output: agentq.output() };
}

describe('agentq submit', () => {
  it('submits a JSONL file and watches the batch to the end with a progress bar', async () => {
    stack = await startStack({ rules });
    const file = path.join(folder, 'batch.jsonl');
    await writeFile(
      file,
      'first plain prompt\n{"prompt": "second as json", "agent": "casual"}\n# a comment\n\n{"prompt": "third", "priority": 9}\n',
    );
    const { code, output } = await run(['submit', file, '--agent', 'casual', '--watch']);
    expect(code).toBe(0);
    expect(output).toMatch(/^submitted 3 tasks$/m);
    expect(output).toMatch(/\[#{28}\] 3\/3 done · 0 failed · 0 running · [\d.]+ tasks\/s/);
    const { body } = await getJson<{ tasks: TaskView[] }>(`${stack.api.url}/v1/tasks`);
    expect(body.tasks.map((task) => [task.prompt, task.agent, task.priority, task.status])).toEqual([
      ['third', 'casual', 9, 'completed'],
      ['second as json', 'casual', 5, 'completed'],
      ['first plain prompt', 'casual', 5, 'completed'],
    ]);
  });

  it('exits 1 and names the tasks that did not complete', async () => {
    stack = await startStack({ rules });
    const { code, output } = await run(['submit', '-', '--agent', 'casual', '--watch'], {
      input: 'fine one\nfail this one\n',
    });
    expect(code).toBe(1);
    expect(output).toMatch(/2\/2 done · 1 failed/);
    expect(output).toMatch(/1 did not complete: [\w-]+ \(failed\)/);
  });

  it('reads standard input and prints the ids, or JSON', async () => {
    stack = await startStack({ rules });
    const plain = await run(['submit', '-', '--agent', 'casual'], { input: 'one\ntwo\n' });
    expect(plain.code).toBe(0);
    const ids = plain.output.trim().split('\n');
    expect(ids).toHaveLength(2);
    await Promise.all(ids.map((id) => waitForEnd(stack!.api.url, id)));
    const json = await run(['submit', '-', '--agent', 'casual', '--json'], { input: 'three\n' });
    expect(JSON.parse(json.output)).toEqual({ tasks: [{ id: expect.any(String), status: 'queued' }] });
  });

  it('submits in a named batch, then lists, gets and prints the result of its tasks', async () => {
    stack = await startStack({ rules });
    const submitted = await run(['submit', '-', '--agent', 'casual', '--batch', 'nightly-1'], {
      input: 'alpha\nfail this one\n',
    });
    expect(submitted.code).toBe(0);
    const [good, bad] = submitted.output.trim().split('\n');
    await Promise.all([good, bad].map((id) => waitForEnd(stack!.api.url, id!)));
    const listed = await run(['list', '--batch', 'nightly-1']);
    expect(listed.code).toBe(0);
    expect(listed.output).toMatch(new RegExp(`^${bad} +failed +casual .+ fail this one$`, 'm'));
    expect(listed.output).toMatch(new RegExp(`^${good} +completed +casual .+ alpha$`, 'm'));
    const failedOnly = await run(['list', '--status', 'failed', '--json']);
    expect((JSON.parse(failedOnly.output) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id)).toEqual([
      bad,
    ]);
    const got = await run(['get', good!]);
    expect(JSON.parse(got.output)).toMatchObject({ id: good, batch: 'nightly-1', status: 'completed' });
    expect(await run(['result', good!])).toEqual({ code: 0, output: 'answer to: alpha\n' });
    const failed = await run(['result', bad!]);
    expect(failed.code).toBe(1);
    expect(failed.output).toMatch(/failed: error: /);
    expect((await run(['result', 'nope'])).code).toBe(1);
  });

  it('says what is wrong with a bad line or a bad task', async () => {
    stack = await startStack({ rules });
    const badLine = await run(['submit', '-'], { input: 'ok\n{"prompt": broken\n' });
    expect(badLine).toMatchObject({
      code: 2,
      output: expect.stringMatching(/Line 2 starts with "\{" but is not valid JSON/),
    });
    const badTask = await run(['submit', '-', '--agent', 'wizard'], { input: 'ok\n' });
    expect(badTask.code).toBe(1);
    expect(badTask.output).toMatch(/agentq: The API refused the batch:\n {2}standard input line 1: agent: /);
    // Said by the line of the file it came from (comments and blank lines counted), not by its index.
    const file = path.join(folder, 'tasks.jsonl');
    await writeFile(file, '# my tasks\nfine\n\n{"prompt": "x", "priority": 42}\n');
    const located = await run(['submit', file]);
    expect(located.code).toBe(1);
    expect(located.output).toContain(`${file} line 4: priority: `);
    // A file that is not there: said plainly, without a stack trace.
    const missing = await run(['submit', path.join(folder, 'nope.jsonl')]);
    expect(missing.code).toBe(2);
    expect(missing.output).toBe(
      `agentq: No file ${path.join(folder, 'nope.jsonl')}: give a JSONL file of tasks, or - for standard input.\n`,
    );
  });
});

describe('agentq watch, status, cancel, retry', () => {
  it('watch shows the steps as they happen and ends with the answer', async () => {
    stack = await startStack({ rules });
    const [taskId] = await stack.submit([{ prompt: 'use a tool please', agent: 'coder' }]);
    const { code, output } = await run(['watch', taskId!]);
    expect(code).toBe(0);
    expect(output).toMatch(/step 1 · asking test-model/);
    expect(output).toMatch(/→ bash \{"command":"seq 1 20"\}/);
    expect(output).toMatch(/ok \d+ ms\n {4}1\n {4}2\n[\s\S]*… 14 more lines/);
    expect(output).toMatch(/completed\n\nAnswer\nanswer to: use a tool please\n$/);
  });

  it("watch prints a streaming agent's answer as it forms, then the rest of the step without it", async () => {
    const answer = `${'word '.repeat(100)}end`;
    stack = await startStack({
      rules: [{ reply: { content: answer, chunkDelayMs: 40 } }],
      env: {
        AGENTQ_CONFIG: configFile({
          agents: { talker: { description: 'talks', instructions: 'Answer.', tools: [], stream: true } },
        }),
      },
    });
    const [taskId] = await stack.submit([{ prompt: 'talk', agent: 'talker' }]);
    const { code, output } = await run(['watch', taskId!]);
    expect(code).toBe(0);
    // The answer forming on a line of its own (from when watch joined), then the model's line without the
    // text again, then the answer.
    const forming = /^ {2}… (.+)$/m.exec(output);
    expect(answer.includes(forming![1]!)).toBe(true);
    expect(output).toMatch(/model answered in \d+ ms · \d+ tokens so far\n/);
    expect(output).toMatch(new RegExp(`\\nAnswer\\n${answer}\\n$`));
  });

  it("watch shows a task's children's steps indented under it by depth as they happen, each naming its task", async () => {
    const delegate = (prompt: string) => ({
      toolCalls: [{ name: 'delegate', arguments: { tasks: [{ agent: 'helper', prompt }] } }],
    });
    // The first model call waits for watch to be following: what it prints is live, not a replay.
    let follow!: () => void;
    const following = new Promise<void>((resolve) => (follow = resolve));
    stack = await startStack({
      rules: [
        {
          match: (request: DoubleRequest) => promptOf(request) === 'lead' && !hasTool(request),
          reply: async () => (await following, delegate('help')),
        },
        {
          match: (request: DoubleRequest) => promptOf(request) === 'help' && !hasTool(request),
          reply: delegate('help deeper'),
        },
        { reply: (request: DoubleRequest) => ({ content: `answer to: ${promptOf(request)}` }) },
      ],
      env: {
        AGENTQ_CONFIG: configFile({
          agents: {
            boss: {
              description: 'leads',
              instructions: 'Lead.',
              tools: ['delegate'],
              delegate: { agents: ['helper'] },
            },
            helper: {
              description: 'helps',
              instructions: 'Help.',
              tools: ['delegate'],
              delegate: { agents: ['helper'] },
            },
          },
        }),
      },
    });
    const [taskId] = await stack.submit([{ prompt: 'lead', agent: 'boss' }]);
    const watch = spawnAgentq(['watch', taskId!, '--url', stack.api.url], {});
    await watch.waitFor(/asking test-model/);
    follow();
    expect(await watch.exited).toBe(0);
    const output = watch.output();
    const time = String.raw`\d{1,2}:\d{2}:\d{2}(?: [AP]M)?`;
    const line = (pad: number, text: string) => new RegExp(`^${time} {${pad + 1}}${text}`, 'm');
    // The task's own lines as before; its child's two spaces in, its grandchild's four, each naming its task.
    expect(output).toMatch(line(0, 'started c1\\.1 on helper'));
    expect(output).toMatch(line(0, 'waiting for the 1 task it started'));
    expect(output).toMatch(line(2, 'c1\\.1 helper waiting for the 1 task it started'));
    expect(output).toMatch(
      line(4, 'c1\\.1\\.c1\\.1 helper model answered in \\d+ ms · \\d+ tokens so far\\n {8}answer to: help deeper'),
    );
    expect(output).toMatch(line(2, 'c1\\.1 helper started c1\\.1\\.c1\\.1 on helper'));
    // Each task's lines in the order they happened (across tasks, a child found after it began is read back).
    const ends = [
      line(4, 'c1\\.1\\.c1\\.1 helper completed$'),
      line(2, 'c1\\.1 helper completed$'),
      line(0, 'completed$'),
    ];
    for (const end of ends) expect(output).toMatch(end);
    const grandchild = ['queued', 'started on', 'step 1', 'model answered', 'completed'].map((text) =>
      output.search(line(4, `c1\\.1\\.c1\\.1 helper ${text}`)),
    );
    expect([...grandchild].sort((a, b) => a - b)).toEqual(grandchild);
    expect(output).toMatch(/completed\n\nAnswer\nanswer to: lead\n$/);
  });

  it('watch shows what a task and its model wrote, never a terminal control', async () => {
    stack = await startStack({ rules });
    const [taskId] = await stack.submit([{ prompt: 'escape the terminal', agent: 'coder' }]);
    const { code, output } = await run(['watch', taskId!]);
    expect(code).toBe(0);
    // No control but tabs and line breaks, no C1 control, no bidirectional override: each is shown as its escape.
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    expect(output).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
    expect(output).toContain('out\\u001b]52;c;cHduZWQ=\\u0007\\u001b[2J\n');
    expect(output).toContain('next\\u000dover');
    expect(output).toMatch(/Answer\ndone \\u001b\[1A\\u001b\[2Kcompleted\\u009b31m \\u202eevil\nend\n$/);
    // Scripts get the events as they are (JSON escapes controls).
    const json = await run(['watch', taskId!, '--json']);
    expect(json.output).toContain('\\u001b[2J');
  });

  it('status lists the pools with their workers', async () => {
    stack = await startStack({ rules });
    const { code, output } = await run(['status']);
    expect(code).toBe(0);
    expect(output).toMatch(/^pool +waiting +active +delayed +failed +jobs\/min +workers +concurrency$/m);
    expect(output).toMatch(/^coder +0 +0 +0 +0 +0 +1 +4$/m);
    expect(output).toMatch(/1 worker process online/);
  });

  it('schedules shows a line per schedule, a prompt of many lines flattened as list shows it', async () => {
    stack = await startStack({ rules, pools: [] });
    const prompt = 'check the backups\n\n  then\twrite the report\r\nand mail it';
    const created = await fetch(`${stack.api.url}/v1/schedules`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ every: 3_600_000, paused: true, task: { prompt, agent: 'casual' } }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const { code, output } = await run(['schedules']);
    console.log(output);
    expect(code).toBe(0);
    const lines = output.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(
      new RegExp(`^${id} +default +every 3600000 ms +paused +- +check the backups then write the report…$`),
    );
  });

  it("usage shows the key's tenant against each of its limits, and an admin any tenant's", async () => {
    const env = tenantsEnv({
      acme: { keys: ['key-acme'], limits: { tokensPerDay: 5000 } },
      globex: { keys: ['key-globex'] },
      default: { keys: ['key-admin'], admin: true },
      '*': { limits: { unfinished: 2, mb: 1.5 } },
    });
    // No coder pool: the coder tasks stay queued, holding their places.
    stack = await startStack({ rules, pools: ['casual'], env });
    const submitted = await fetch(`${stack.api.url}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: 'Bearer key-acme', 'content-type': 'application/json' },
      body: JSON.stringify({
        tasks: [
          { prompt: 'wait one', agent: 'coder' },
          { prompt: 'wait two', agent: 'coder' },
        ],
      }),
    });
    expect(submitted.status).toBe(202);
    const plain = await run(['usage', '--api-key', 'key-acme']);
    expect(plain.code).toBe(0);
    expect(plain.output).toMatch(/^tenant acme$/m);
    expect(plain.output).toMatch(/^unfinished tasks +2 of 2 +reached$/m);
    expect(plain.output).toMatch(/^stored tasks +2 of 1,000,000$/m);
    expect(plain.output).toMatch(/^written to Redis +1\.\d KiB of 1\.5 MiB$/m);
    expect(plain.output).toMatch(
      /^spent today +0 tokens of 5,000, \$0\.0000 \(resets \d{4}-\d\d-\d\dT00:00:00\.000Z\)$/m,
    );
    expect(plain.output).toMatch(/^new tasks are refused while a limit is reached$/m);
    const other = await run(['usage', '--api-key', 'key-globex']);
    expect(other.output).toMatch(/^spent today +not counted \(no daily limit\)$/m);
    expect(other.output).not.toMatch(/reached/);
    const json = await run(['usage', '--tenant', 'acme', '--json', '--api-key', 'key-admin']);
    expect(JSON.parse(json.output)).toMatchObject({
      tenant: 'acme',
      tasks: { unfinished: 2, stored: 2 },
      reached: ['unfinished'],
    });
    const refused = await run(['usage', '--tenant', 'acme', '--api-key', 'key-globex']);
    expect(refused).toMatchObject({
      code: 1,
      output: expect.stringMatching(/agentq: This key is tenant globex's: it reads its own usage only/),
    });
    // Every tenant, a line each: an admin's key only.
    const all = await run(['usage', '--all', '--api-key', 'key-admin']);
    expect(all.code).toBe(0);
    expect(all.output.split('\n').filter(Boolean)).toEqual([
      expect.stringMatching(/^tenant +unfinished +stored +written +today +reached$/),
      expect.stringMatching(/^default +0\/2 +0\/1,000,000 +0\.0 KiB of 1\.5 MiB +- +-$/),
      expect.stringMatching(/^acme +2\/2 +2\/1,000,000 +1\.\d KiB of 1\.5 MiB +0 tokens, \$0\.0000 +unfinished$/),
      expect.stringMatching(/^globex +0\/2 +0\/1,000,000 +0\.0 KiB of 1\.5 MiB +- +-$/),
    ]);
    expect((await run(['usage', '--all', '--api-key', 'key-acme'])).output).toMatch(/agentq: This needs an admin key/);
  });

  it("webhooks secret prints the key's tenant's signing key, and an admin any tenant's", async () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const env = tenantsEnv({ acme: { keys: ['key-acme'] }, default: { keys: ['key-admin'], admin: true } });
    stack = await startStack({ rules, pools: [], env: { ...env, AGENTQ_WEBHOOK_SECRET: secret } });
    const own = await run(['webhooks', 'secret', '--api-key', 'key-acme']);
    expect(own).toEqual({ code: 0, output: `${tenantSigningSecret(secret, 'acme')}\n` });
    const asked = await run(['webhooks', 'secret', '--tenant', 'acme', '--json', '--api-key', 'key-admin']);
    expect(JSON.parse(asked.output)).toEqual({ tenant: 'acme', secret: tenantSigningSecret(secret, 'acme') });
    const refused = await run(['webhooks', 'secret', '--tenant', 'default', '--api-key', 'key-acme']);
    expect(refused).toMatchObject({ code: 1, output: expect.stringMatching(/agentq: This key is tenant acme's/) });
    expect((await run(['webhooks', 'key', '--api-key', 'key-acme'])).output).toMatch(
      /usage: agentq webhooks secret \[--tenant T\]/,
    );
  });

  it('cancel stops a task and retry runs it again as a new task', async () => {
    stack = await startStack({ rules });
    const [taskId] = await stack.submit([{ prompt: 'slow work', agent: 'casual' }]);
    await expect.poll(() => stack!.double.requests.length, { timeout: 10_000 }).toBe(1);
    const cancelled = await run(['cancel', taskId!]);
    expect(cancelled.code).toBe(0);
    await waitForEnd(stack.api.url, taskId!);
    const retried = await run(['retry', taskId!, '--json']);
    expect(retried.code).toBe(0);
    const { id } = JSON.parse(retried.output) as { id: string };
    const fresh = (await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body;
    expect(fresh).toMatchObject({ prompt: 'slow work', agent: 'casual', metadata: { retryOf: taskId } });
    expect((await run(['retry', id])).output).toMatch(
      /agentq: Task ".+" is (queued|running): only a failed or cancelled task/,
    );
    // A task that ended has nothing to cancel: said, and exit 1.
    const again = await run(['cancel', taskId!]);
    expect(again).toMatchObject({ code: 1, output: `${taskId} already ended (cancelled): nothing to cancel\n` });
    // Delete: the ended one goes; the retry, not ended yet, stays, with the API's reason.
    expect(await run(['delete', taskId!])).toMatchObject({ code: 0, output: `deleted ${taskId}\n` });
    expect((await fetch(`${stack.api.url}/v1/tasks/${taskId}`)).status).toBe(404);
    expect((await run(['delete', id])).output).toMatch(
      /agentq: Task ".+" is (queued|running): only a task that has ended/,
    );
  });

  it('cancel --batch and retry --batch act on every task of a batch they apply to, and on no other', async () => {
    stack = await startStack({ rules });
    const submit = await fetch(`${stack.api.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        batch: 'b2',
        tasks: ['slow a', 'slow b', 'fail c'].map((prompt) => ({ prompt, agent: 'casual' })),
      }),
    });
    const ids = ((await submit.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
    const [other] = await stack.submit([{ prompt: 'slow, of no batch', agent: 'casual' }]);
    await waitForEnd(stack.api.url, ids[2]!);
    expect(await run(['cancel', '--batch', 'b2'])).toEqual({
      code: 0,
      output: 'cancel requested: 2 tasks of batch b2\n',
    });
    await Promise.all(ids.slice(0, 2).map((id) => waitForEnd(stack!.api.url, id)));
    const statusOf = async (id: string) => (await getJson<TaskView>(`${stack!.api.url}/v1/tasks/${id}`)).body.status;
    expect(await Promise.all([...ids, other!].map(statusOf))).toEqual([
      'cancelled',
      'cancelled',
      'failed',
      expect.stringMatching(/^(queued|running)$/),
    ]);
    expect(JSON.parse((await run(['retry', '--batch', 'b2', '--json'])).output)).toEqual({
      action: 'retry',
      matched: 3,
      changed: 3,
      more: false,
    });
    const batch = (await getJson<{ tasks: TaskView[] }>(`${stack.api.url}/v1/tasks?batch=b2`)).body.tasks;
    expect(
      batch
        .map((task) => task.metadata?.retryOf)
        .filter(Boolean)
        .sort(),
    ).toEqual([...ids].sort());
    expect((await run(['retry', ids[0]!, '--batch', 'b2'])).code).toBe(2);
  });

  it('delete --batch removes every ended task of a batch, and says which it left and why', async () => {
    stack = await startStack({ rules });
    const submit = await fetch(`${stack.api.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        batch: 'b1',
        tasks: ['one', 'two', 'slow three'].map((prompt) => ({ prompt, agent: 'casual' })),
      }),
    });
    const [one, two, slow] = ((await submit.json()) as { tasks: Array<{ id: string }> }).tasks.map((task) => task.id);
    const [other, stuck] = await stack.submit([
      { prompt: 'not of the batch', agent: 'casual' },
      { prompt: 'slow subtask', agent: 'casual' },
    ]);
    await Promise.all([one, two, other].map((id) => waitForEnd(stack!.api.url, id!)));
    // One's tree holds a task still running (as a subtask still stopping after its task was cancelled).
    const redis = connectRedis({ url: stack.config.REDIS_URL });
    await redis.hset(
      createKeys(stack.config.AGENTQ_REDIS_PREFIX, stack.config.AGENTQ_CELLS).task(one!),
      'children',
      JSON.stringify([stuck]),
    );
    redis.disconnect();
    // Two goes; one stays for its running subtask (exit 1, with the reason); the slow one has not ended.
    expect(await run(['delete', '--batch', 'b1'])).toEqual({
      code: 1,
      output: 'deleted 1 task of batch b1; 1 left: a subtask of theirs has not ended (cancel them first)\n',
    });
    expect(
      await Promise.all(
        [one, two, slow, other].map(async (id) => (await fetch(`${stack!.api.url}/v1/tasks/${id}`)).status),
      ),
    ).toEqual([200, 404, 200, 200]);
    await Promise.all([slow, stuck].map((id) => fetch(`${stack!.api.url}/v1/tasks/${id}/cancel`, { method: 'POST' })));
    await Promise.all([slow, stuck].map((id) => waitForEnd(stack!.api.url, id!)));
    expect(JSON.parse((await run(['delete', '--batch', 'b1', '--json'])).output)).toEqual({
      batch: 'b1',
      deleted: 2,
      left: 0,
    });
    expect(
      await Promise.all(
        [one, slow, stuck, other].map(async (id) => (await fetch(`${stack!.api.url}/v1/tasks/${id}`)).status),
      ),
    ).toEqual([404, 404, 404, 200]);
    expect(await run(['delete', one!, '--batch', 'b1'])).toMatchObject({ code: 2 });
  });

  it('submits on a named model and forks a task from a step, printing the new ids', async () => {
    stack = await startStack({ rules, env: { AGENTQ_CONFIG: configFile({ models: { 'other-model': {} } }) } });
    const submitted = await run(['submit', '-', '--agent', 'casual', '--model', 'other-model', '--watch', '--json'], {
      input: 'use a tool please\n',
    });
    expect(submitted.code).toBe(0);
    const [source] = (JSON.parse(submitted.output) as { tasks: Array<{ id: string }> }).tasks;
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${source!.id}`)).body).toMatchObject({
      model: 'other-model',
      steps: 2,
      status: 'completed',
    });
    const forked = await run([
      'fork',
      source!.id,
      '--from-step',
      '2',
      '--prompt',
      'say it shorter',
      '--model',
      'test-model',
    ]);
    expect(forked.code).toBe(0);
    const id = forked.output.trim();
    await waitForEnd(stack.api.url, id);
    expect((await getJson<TaskView>(`${stack.api.url}/v1/tasks/${id}`)).body).toMatchObject({
      model: 'test-model',
      forkOf: { id: source!.id, step: 2 },
      status: 'completed',
    });
    expect((await run(['fork', source!.id])).output).toMatch(/usage: agentq fork ID --from-step N/);
    expect((await run(['fork', source!.id, '--from-step', '9'])).output).toMatch(
      /agentq: Task ".+" has 2 completed steps: fromStep must be 1 to 2/,
    );
  });

  it('says its version, and colours a terminal unless NO_COLOR is set', async () => {
    stack = await startStack({ rules });
    const version = await run(['--version']);
    expect(version).toMatchObject({ code: 0, output: 'agentq 0.1.0\n' });
    // `script` gives the command a terminal of its own.
    const inTerminal = async (env: Record<string, string>) => {
      const command = `${process.execPath} ${AGENTQ_MAIN} status --url ${stack!.api.url}`;
      const terminal = spawn('script', ['-qec', command, '/dev/null'], {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      });
      let output = '';
      terminal.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      await new Promise((resolve) => terminal.once('exit', resolve));
      return output;
    };
    expect(await inTerminal({})).toContain('\x1b[1mpool');
    const plain = await inTerminal({ NO_COLOR: '1' });
    expect(plain).toMatch(/^pool +waiting/m);
    expect(plain).not.toContain('\x1b[');
  });

  it('sends its API key, and says so when the API wants one', async () => {
    stack = await startStack({ rules, env: tenantsEnv({ default: { keys: ['secret-1', 'secret-2'] } }) });
    const refused = await run(['status']);
    expect(refused).toMatchObject({ code: 1, output: expect.stringMatching(/agentq: This API needs a key/) });
    expect((await run(['status', '--api-key', 'secret-2'])).code).toBe(0);
    expect((await run(['status'], { env: { AGENTQ_API_KEY: 'secret-1' } })).code).toBe(0);
    expect((await run(['status', '--api-key', 'wrong'])).output).toMatch(/The API key is not valid/);
  });

  it('explains when it cannot reach agentq', async () => {
    const agentq = spawnAgentq(['status', '--url', 'http://127.0.0.1:9'], {});
    expect(await agentq.exited).toBe(1);
    expect(agentq.output()).toMatch(
      /Could not reach agentq at http:\/\/127\.0\.0\.1:9.*Is it running\? Set --url or AGENTQ_URL\./,
    );
  });
});
