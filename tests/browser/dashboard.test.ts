/** The dashboard in a real browser, against the real API, workers and Redis. */
import type { TaskView } from '@agentq/contract';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { DoubleRequest } from '@agentq/llm';
import { ARTIFACTS, launchBrowser } from '../helpers/browser.js';
import { waitForEnd } from '../helpers/sse.js';
import { getJson, startStack, type Stack } from '../helpers/stack.js';
import { configFile, tenantsEnv } from '../helpers/config-file.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

const XSS_PROMPT = '<img src=x onerror="window.__xss=1"> greet me';
const XSS_ANSWER = '<script>window.__xss=2</script><b onmouseover="window.__xss=3">bold?</b> hello';
const promptOf = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const toolResults = (request: DoubleRequest) => request.messages.filter((message) => message.role === 'tool').length;

let browser: Browser;
let stack: Stack | undefined;
let page: Page;
let pageErrors: string[] = [];

beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  // The page's policy (security-headers.ts) blocks nothing the dashboard itself does, in any test.
  if (page && !page.isClosed())
    expect(await page.evaluate(() => (window as unknown as { __blocked?: string[] }).__blocked ?? [])).toEqual([]);
  await page?.close();
  await stack?.close();
  stack = undefined;
});

async function open(url: string): Promise<Page> {
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  pageErrors = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.addInitScript(() => {
    const blocked: string[] = [];
    (window as unknown as { __blocked: string[] }).__blocked = blocked;
    document.addEventListener('securitypolicyviolation', (event) =>
      blocked.push(`${event.effectiveDirective} ${event.blockedURI}`),
    );
  });
  await page.goto(url);
  return page;
}

describe('the dashboard', () => {
  it('loads fast, submits a batch, and shows a task reach completed with its steps', async () => {
    stack = await startStack({
      rules: [
        { match: (request) => promptOf(request).startsWith('slow'), reply: { content: 'too late', delayMs: 30_000 } },
        {
          match: (request) => toolResults(request) === 0 && (request.tools?.length ?? 0) > 3,
          reply: {
            content: 'Writing it.',
            toolCalls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'line\n'.repeat(40) } }],
          },
        },
        {
          match: (request) => toolResults(request) === 1,
          reply: { toolCalls: [{ name: 'bash', arguments: { command: 'cat notes.txt' } }] },
        },
        { reply: { content: 'All written.', reasoning: 'The file is there.' } },
      ],
    });
    const started = Date.now();
    await open(`${stack.api.url}/#/tasks`);
    await page.waitForSelector('table.tasks');
    const loadMs = Date.now() - started;
    const domReady = await page.evaluate(
      () => (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).domContentLoadedEventEnd,
    );
    // What the page loads, all of it (scripts, styles, its first API calls): the measure of "fast" that
    // holds on any machine (about 160 KB). The time is a cold browser's on a shared machine, 0.6-1.1 s
    // here: bounded loosely, against a page that hangs.
    const bytes = await page.evaluate(() =>
      performance
        .getEntriesByType('resource')
        .reduce((sum, entry) => sum + (entry as PerformanceResourceTiming).transferSize, 0),
    );
    console.log(
      `dashboard: DOMContentLoaded at ${Math.round(domReady)} ms, task table shown after ${loadMs} ms, ${Math.round(bytes / 1024)} KB loaded`,
    );
    expect(bytes).toBeLessThan(300 * 1024);
    expect(domReady).toBeLessThan(3_000);

    await page.fill(
      '#batch-text',
      'write the notes file\n{"prompt": "slow: think for a long time", "agent": "casual"}',
    );
    await page.selectOption('#batch-agent', 'coder');
    await page.click('#batch-submit');
    await page.waitForSelector('text=/Queued 2 tasks as batch web-/');
    await page.waitForSelector('tr.task-row >> text=write the notes file');
    await page.click('tr.task-row >> text=write the notes file');
    await page.waitForSelector('.task-summary .badge[data-status="completed"]');
    await page.waitForSelector('#timeline .event[data-type="task.completed"]');
    const timeline = await page
      .locator('#timeline .event')
      .evaluateAll((items) => items.map((item) => item.getAttribute('data-type')));
    expect(timeline).toEqual(
      expect.arrayContaining([
        'task.started',
        'llm.request',
        'llm.response',
        'tool.call',
        'step.completed',
        'reasoning',
        'task.completed',
      ]),
    );
    expect(await page.locator('#timeline .tool-name').allTextContents()).toEqual(['write_file', 'bash']);
    // Each step is a fold headed by what it did; the earlier ones fold away, and open on a click.
    expect(
      await page
        .locator('#timeline details.step > summary')
        .evaluateAll((items) => items.map((item) => item.textContent)),
    ).toEqual([
      expect.stringMatching(/^Step 1 · write_file · model \S+/),
      expect.stringMatching(/^Step 2 · bash · model /),
      expect.stringMatching(/^Step 3 · answer · model /),
    ]);
    expect(await page.locator('#timeline details.step[open]').getAttribute('data-step')).toBe('3');
    await page.click('#timeline details.step[data-step="1"] > summary');
    // A write_file's content shows as the file, line by line.
    expect(await page.locator('#timeline details.step[data-step="1"] pre.arguments').textContent()).toBe(
      `path: notes.txt\ncontent:\n${'line\n'.repeat(40)}`,
    );
    // The answer shows once: in the result; its step says so.
    expect(await page.locator('#timeline .answer-note').textContent()).toBe('The answer: shown above as the result.');
    // Long output is folded, with a way to expand it.
    await page.click('#timeline details.step[data-step="2"] > summary');
    const fold = page.locator('#timeline details.fold.output');
    expect(await fold.locator('summary').textContent()).toMatch(/^output: \d+ lines/);
    await fold.locator('summary').click();
    expect(await fold.locator('pre').textContent()).toContain('line\nline');
    expect(await page.locator('#task-result').textContent()).toBe('All written.');
    await page.screenshot({ path: `${ARTIFACTS}dashboard-task.png`, fullPage: true });

    // Cancel the slow one from its page.
    await page.click('a.back');
    await page.click('tr.task-row >> text=slow: think for a long time');
    await page.waitForSelector('.task-summary .badge[data-status="running"]');
    await page.click('#cancel-task');
    await page.waitForSelector('.task-summary .badge[data-status="cancelled"]');
    await page.waitForSelector('#retry-task');
    await page.click('a.back');
    await page.click('.chip[data-status="cancelled"]');
    await page.waitForFunction(() => document.querySelectorAll('tr.task-row').length === 1);
    await page.screenshot({ path: `${ARTIFACTS}dashboard-list.png` });
    expect(pageErrors).toEqual([]);
  });

  it('shows what a model or a user wrote as text, never as HTML', async () => {
    stack = await startStack({ rules: [{ reply: { content: XSS_ANSWER } }] });
    const [taskId] = await stack.submit([{ prompt: XSS_PROMPT, agent: 'casual' }]);
    await waitForEnd(stack.api.url, taskId!);
    await open(`${stack.api.url}/#/tasks`);
    await page.waitForSelector('tr.task-row');
    expect(await page.locator('tr.task-row td.prompt').textContent()).toBe(XSS_PROMPT);
    await page.click('tr.task-row');
    await page.waitForSelector('#task-result');
    expect(await page.locator('#task-result').textContent()).toBe(XSS_ANSWER);
    await page.locator('#task-result').hover();
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.locator('#app img, #app script, #app b').count()).toBe(0);
    await page.screenshot({ path: `${ARTIFACTS}dashboard-xss.png`, fullPage: true });
  });

  it('shows a plan as a graph with the subtasks coloured by status', async () => {
    const isPlanner = (request: DoubleRequest) =>
      String(request.messages[0]?.content ?? '').startsWith('You are the planner');
    stack = await startStack({
      rules: [
        {
          match: isPlanner,
          reply: {
            content:
              '```json\n{"plan":[{"id":"1","agent":"casual","task":"gather","need":[]},{"id":"2","agent":"casual","task":"check","need":[]},{"id":"3","agent":"casual","task":"report","need":["1","2"]}]}\n```',
          },
        },
        { reply: { content: 'ok' } },
      ],
    });
    const [rootId] = await stack.submit([{ prompt: 'plan and report' }]);
    await waitForEnd(stack.api.url, rootId!);
    await open(`${stack.api.url}/#/tasks/${rootId}`);
    await page.waitForSelector('.plan-graph .node.status-completed');
    expect(await page.locator('.plan-graph .node').count()).toBe(3);
    expect(await page.locator('.plan-graph .edge').count()).toBe(2);
    expect(await page.locator('.plan-graph .node.status-completed').count()).toBe(3);
    await page.screenshot({ path: `${ARTIFACTS}dashboard-plan.png`, fullPage: true });
    await page.click('.plan-graph .node[data-plan-id="3"]');
    await page.waitForSelector('text=Part of');
  });

  it('shows a plan its client gave as text: ids and steps with markup never become HTML', async () => {
    stack = await startStack({ rules: [{ reply: { content: 'ok' } }] });
    const hostile = '<img src=x onerror="window.__xss=1">';
    const plan = [
      { id: hostile, agent: 'casual', task: `${hostile} first` },
      { id: '<b>2</b>', agent: 'casual', task: '<script>window.__xss=2</script> then', need: [hostile] },
    ];
    const [rootId] = await stack.submit([{ prompt: 'my own plan', plan }]);
    await waitForEnd(stack.api.url, rootId!);
    await open(`${stack.api.url}/#/tasks/${rootId}`);
    await page.waitForSelector('.plan-graph .node.status-completed');
    expect(await page.locator('.plan-graph .node').count()).toBe(2);
    expect(await page.locator('.plan-graph').textContent()).toContain(hostile);
    expect(await page.locator('.plan-graph').textContent()).toContain('<b>2</b>');
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.locator('#app img, #app script, #app b').count()).toBe(0);
  });

  it('answers a task that waits for its user', async () => {
    const hasTool = (request: DoubleRequest) => request.messages.some((message) => message.role === 'tool');
    stack = await startStack({
      rules: [
        {
          match: (request) => !hasTool(request),
          reply: { toolCalls: [{ name: 'ask_user', arguments: { question: 'Which colour?' } }] },
        },
        {
          reply: (request) => ({
            content: `Painting it ${String(request.messages.at(-1)!.content).replace('The user answered: ', '')}.`,
          }),
        },
      ],
    });
    const [taskId] = await stack.submit([{ prompt: 'paint the fence', agent: 'casual' }]);
    await open(`${stack.api.url}/#/tasks/${taskId}`);
    await page.waitForSelector('.task-summary .badge[data-status="waiting"]');
    expect(await page.locator('.answer .question').textContent()).toBe('Which colour?');
    await page.fill('#answer-text', 'green');
    await page.click('.answer button');
    await page.waitForSelector('.task-summary .badge[data-status="completed"]');
    expect(await page.locator('#task-result').textContent()).toBe('Painting it green.');
  });

  it("shows a task's tree: the tasks it started with agent, status and link, those it waits for, and each child's way back", async () => {
    const hasTool = (request: DoubleRequest) => request.messages.some((message) => message.role === 'tool');
    // A model names the children: their prompts are markup that must stay text.
    const childPrompt = '<img src=x onerror="window.__xss=4"> child';
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    stack = await startStack({
      rules: [
        {
          match: (request) => promptOf(request) === 'lead it' && !hasTool(request),
          reply: {
            toolCalls: [
              {
                name: 'delegate',
                arguments: {
                  tasks: [
                    { agent: 'helper', prompt: `${childPrompt} one` },
                    { agent: 'quick', prompt: `${childPrompt} two` },
                  ],
                },
              },
            ],
          },
        },
        { match: (request) => promptOf(request).endsWith('two'), reply: { content: 'two done' } },
        {
          match: (request) => promptOf(request).endsWith('one'),
          reply: async () => (await held, { content: 'one done' }),
        },
        { reply: { content: 'all gathered' } },
      ],
      env: {
        AGENTQ_CONFIG: configFile({
          agents: {
            boss: {
              description: 'leads',
              instructions: 'Lead.',
              tools: ['delegate'],
              delegate: { agents: ['helper', 'quick'] },
            },
            helper: { description: 'helps', instructions: 'Help.', tools: [] },
            quick: { description: 'is quick', instructions: 'Be quick.', tools: [] },
          },
        }),
      },
    });
    const [taskId] = await stack.submit([{ prompt: 'lead it', agent: 'boss' }]);
    const one = `${taskId}.c1.1`;
    const two = `${taskId}.c1.2`;
    await open(`${stack.api.url}/#/tasks/${taskId}`);
    await page.waitForSelector('.task-summary .badge[data-status="waiting"]');
    // Its children, each with its agent, status and a link; once the quick one ended, it waits for the other alone.
    await page.waitForSelector(`.children li[data-child="${two}"] .badge[data-status="completed"]`);
    expect(await page.locator('.children h2').textContent()).toBe('Tasks it started');
    expect(await page.locator(`.children li[data-child="${one}"] a`).textContent()).toBe(
      `${one.slice(0, 8)}.c1.1 · helper`,
    );
    expect(await page.locator(`.children li[data-child="${one}"] .badge`).getAttribute('data-status')).toBe('running');
    expect(await page.locator(`.children li[data-child="${two}"] a`).textContent()).toBe(
      `${two.slice(0, 8)}.c1.2 · quick`,
    );
    await page.waitForSelector('.waits-for-children li[data-running]');
    expect(await page.locator('.waits-for-children').textContent()).toMatch(/1 of 2 still runs/);
    expect(
      await page
        .locator('.waits-for-children li[data-running]')
        .evaluateAll((items) => items.map((item) => item.getAttribute('data-running'))),
    ).toEqual([one]);
    expect(await page.locator('.waits-for-children a').getAttribute('href')).toBe(`#/tasks/${encodeURIComponent(one)}`);
    // A child's page: its prompt as text, and its way back to its parent.
    await page.click(`.children li[data-child="${one}"] a`);
    await page.waitForSelector('.task-summary .parent a');
    expect(await page.locator('.prompt').textContent()).toBe(`${childPrompt} one`);
    expect(await page.locator('.task-summary .parent a').getAttribute('href')).toBe(
      `#/tasks/${encodeURIComponent(taskId!)}`,
    );
    release();
    await page.click('.task-summary .parent a');
    await page.waitForSelector('.task-summary .badge[data-status="completed"]');
    await page.waitForSelector(`.children li[data-child="${one}"] .badge[data-status="completed"]`);
    expect(await page.locator('.waits-for-children').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(pageErrors).toEqual([]);
  });

  it('shows the pools with their workers and isolation, and asks for the API key when keys are configured', async () => {
    stack = await startStack({
      env: tenantsEnv({ acme: { keys: ['k-tenant'] }, default: { keys: ['k-admin'], admin: true } }),
      rules: [{ reply: { content: 'ok' } }],
    });
    await open(`${stack.api.url}/#/pools`);
    await page.waitForSelector('#key-dialog');
    await page.fill('#api-key', 'k-admin');
    await page.click('#key-dialog button');
    await page.waitForSelector('.pool[data-pool="coder"] .workers li');
    expect(await page.locator('.pool').count()).toBe(5);
    expect(await page.locator('.pool[data-pool="coder"] .badge.isolation-jail').textContent()).toBe('jailed');
    expect(await page.locator('.isolation-warning').count()).toBe(0);
    await page.waitForSelector('nav a[href="/admin/queues"]');
    await page.screenshot({ path: `${ARTIFACTS}dashboard-pools.png` });
    // The overview shows an admin every tenant against its limits; a tenant's key (below) only its own.
    await page.goto(`${stack.api.url}/#/`);
    await page.waitForSelector('#tenants tr[data-tenant="acme"]');
    expect(
      await page.locator('#tenants tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-tenant'))),
    ).toEqual(['default', 'acme']);
    expect(
      (await page.locator('#tenants tr[data-tenant="acme"] td').allTextContents()).map((text) => text.trim()),
    ).toEqual(['acme', '0 of 100,000', '0 of 1,000,000', '0.0 KiB', '—']);
    // The key also opens bull-board, as a cookie: an admin's does; and its page asks nothing of other hosts.
    // (The browser stops its font request before it leaves: the page's policy allows only this host.)
    const outside: string[] = [];
    page.on(
      'requestfinished',
      (request) =>
        !request.url().startsWith(stack!.api.url) && !request.url().startsWith('data:') && outside.push(request.url()),
    );
    const blocked: string[] = [];
    page.on('requestfailed', (request) => blocked.push(`${request.url()} ${request.failure()?.errorText ?? ''}`));
    expect((await page.goto(`${stack.api.url}/admin/queues`))?.status()).toBe(200);
    await page.waitForLoadState('networkidle');
    expect(outside).toEqual([]);
    expect(blocked).toEqual([expect.stringMatching(/^https:\/\/fonts\.googleapis\.com\/.* csp$/)]);

    // A tenant's key sees the counts, not the machines, and bull-board is closed to it.
    await page.goto(`${stack.api.url}/#/pools`);
    await page.evaluate(() => {
      localStorage.setItem('agentq_key', 'k-tenant');
      document.cookie = 'agentq_key=k-tenant; path=/';
    });
    await page.reload();
    await page.waitForSelector('.pool[data-pool="coder"] .badge.isolation-jail');
    expect(await page.locator('.pool[data-pool="coder"] .workers li').count()).toBe(0);
    expect(await page.locator('.pool[data-pool="coder"]').textContent()).toMatch(/1 worker online/);
    expect(await page.locator('nav a[href="/admin/queues"]').count()).toBe(0);
    await page.goto(`${stack.api.url}/#/`);
    await page.waitForSelector('.usage[data-tenant="acme"]');
    expect(await page.locator('.usage').count()).toBe(1);
    expect((await page.goto(`${stack.api.url}/admin/queues`))?.status()).toBe(403);
  });

  it('keeps what is typed in the answer box, its focus and a selection through live updates', async () => {
    stack = await startStack({
      rules: [{ reply: { toolCalls: [{ name: 'ask_user', arguments: { question: 'Which colour?' } }] } }],
    });
    const [taskId] = await stack.submit([{ prompt: 'paint the shed', agent: 'casual' }]);
    await open(`${stack.api.url}/#/tasks/${taskId}`);
    await page.waitForSelector('.task-summary .badge[data-status="waiting"]');
    await page.click('#answer-text');
    await page.keyboard.type('half an ans');
    await page.evaluate(() =>
      window.getSelection()!.selectAllChildren(document.querySelector('.task-summary .prompt')!),
    );
    // The page fetches the task again (every 5 s while it is not ended) and redraws it: twice.
    for (let refresh = 0; refresh < 2; refresh++)
      await page.waitForResponse(
        (response) => response.url().endsWith(`/v1/tasks/${taskId}`) && response.request().method() === 'GET',
        { timeout: 15_000 },
      );
    await page.waitForFunction(() => document.querySelector('.task-summary .duration')?.textContent !== '—');
    expect(await page.inputValue('#answer-text')).toBe('half an ans');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('answer-text');
    expect(await page.evaluate(() => window.getSelection()!.toString())).toBe('paint the shed');
  });

  it('renders Markdown from text nodes: lists, code, tables and links, and nothing in it runs', async () => {
    const answer = [
      '### Plan',
      '- **first** step',
      '- second `step`',
      '',
      '```js',
      'console.log("<b>not bold</b>")',
      '```',
      '',
      '| name | size |',
      '|:---|---:|',
      '| a.txt | 3 B |',
      '',
      '<script>window.__xss=4</script>',
      '',
      '[harmless](javascript:window.__xss=5) [docs](https://example.com/docs) ![pixel](https://tracker.example/p.png)',
      '',
      '<img src=x onerror="window.__xss=6"> &amp; done',
      '',
      'total 4',
      '-rw-r--r-- 1 agentq 91 demo.sh',
    ].join('\n');
    stack = await startStack({ rules: [{ reply: { content: answer } }] });
    const [taskId] = await stack.submit([{ prompt: 'describe it', agent: 'casual' }]);
    await waitForEnd(stack.api.url, taskId!);
    await open(`${stack.api.url}/#/tasks/${taskId}`);
    const result = page.locator('#task-result .markdown');
    await result.waitFor();
    expect(await result.locator('h3').textContent()).toBe('Plan');
    expect(await result.locator('ul > li').count()).toBe(2);
    expect(await result.locator('li strong').textContent()).toBe('first');
    expect(await result.locator('pre code').textContent()).toBe('console.log("<b>not bold</b>")');
    expect(await result.locator('table td').allTextContents()).toEqual(['a.txt', '3 B']);
    expect(
      await result.locator('table td').evaluateAll((cells) => cells.map((cell) => getComputedStyle(cell).textAlign)),
    ).toEqual(['left', 'right']);
    const links = result.locator('a');
    expect(await links.count()).toBe(2); // the web page and the image, as a link; the javascript: one is text
    expect(await links.first().getAttribute('href')).toBe('https://example.com/docs');
    expect(await links.first().getAttribute('rel')).toContain('noopener');
    expect(await result.textContent()).toContain('<script>window.__xss=4</script>');
    expect(await result.textContent()).toContain('<img src=x onerror="window.__xss=6"> & done');
    expect(await page.locator('#app script, #app img, #app b, #app iframe').count()).toBe(0);
    // A single newline keeps its line (a command's output in an answer), as in chat answers.
    expect(await result.locator('p', { hasText: 'total 4' }).evaluate((paragraph) => paragraph.innerHTML)).toBe(
      'total 4<br>-rw-r--r-- 1 agentq 91 demo.sh',
    );
    // The answer shows once, as the result: its step in the timeline says so instead of repeating it.
    await page.waitForSelector('#timeline .answer-note');
    expect(await page.locator('#timeline .markdown h3').count()).toBe(0);
    await page.locator('#task-result a').first().hover();
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    await page.screenshot({ path: `${ARTIFACTS}dashboard-markdown.png`, fullPage: true });
  });

  it('may not be framed by another site, and no response is sniffed or says where a link came from', async () => {
    stack = await startStack({ rules: [{ reply: { content: 'done' } }] });
    // Without keys, the API answers a local dashboard whatever site frames it: the page refuses frames.
    page = await browser.newPage();
    await page.setContent(`<iframe id="framed" src="${stack.api.url}/#/tasks"></iframe>`);
    const framed = await page.waitForFunction(() => {
      const frame = document.querySelector('iframe');
      return frame
        ? new Promise((resolve) =>
            frame.contentDocument === null || frame.contentDocument.readyState === 'complete'
              ? resolve(true)
              : frame.addEventListener('load', () => resolve(true)),
          )
        : false;
    });
    expect(await framed.jsonValue()).toBe(true);
    const frame = page.frames().find((candidate) => candidate !== page.mainFrame());
    expect(
      await frame
        ?.locator('#app')
        .count()
        .catch(() => 0),
    ).toBe(0);
    for (const path of ['/', '/v1/tasks', '/styles.css']) {
      const response = await fetch(`${stack.api.url}${path}`);
      expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    }
  });

  it('stops asking for an ended task', async () => {
    stack = await startStack({ rules: [{ reply: { content: 'done' } }] });
    const [taskId] = await stack.submit([{ prompt: 'quick one', agent: 'casual' }]);
    await waitForEnd(stack.api.url, taskId!);
    page = await browser.newPage();
    // A clock of the test's own: 10 minutes pass at once, and every timer of the page runs as it would.
    await page.clock.install();
    const reads: string[] = [];
    page.on('request', (request) => request.url().includes(`/v1/tasks/${taskId}`) && reads.push(request.url()));
    await page.goto(`${stack.api.url}/#/tasks/${taskId}`);
    await page.waitForSelector('.task-summary .badge[data-status="completed"]');
    // Its event stream ended; the page looked once more and stopped.
    await page.waitForSelector('.task-summary[data-live="off"]');
    const before = reads.length;
    await page.clock.runFor(10 * 60_000);
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0)));
    expect(reads.length).toBe(before);
  });

  it("shows a task's webhook deliveries with each attempt's answer, and resends one", async () => {
    // The resend's answer comes late: the page's look right after the resend sees it pending.
    const hook = await startWebhookReceiver([500, 500, 200], [0, 0, 300]);
    try {
      stack = await startStack({
        rules: [{ reply: { content: 'done' } }],
        env: {
          AGENTQ_WEBHOOK_SECRET: `whsec_${'a'.repeat(43)}=`,
          AGENTQ_WEBHOOK_ALLOW_PRIVATE: 'true',
          // Two attempts (one retry), both 500: the resend is the third.
          AGENTQ_WEBHOOK_RETRY_SCHEDULE: '1ms',
        },
      });
      const url = `${hook.url}?<b>x</b>`;
      const [taskId] = await stack.submit([{ prompt: 'hook', agent: 'casual', webhook: { url } }]);
      await hook.receivedCount(2);
      await open(`${stack.api.url}/#/tasks/${taskId}`);
      const row = page.locator('table.deliveries tbody tr');
      await expect.poll(() => row.locator('.attempts').textContent()).toBe('500 · 500');
      expect(await row.locator('.badge').textContent()).toBe('failed');
      expect(await page.locator('.webhook .mono').textContent()).toBe(url);
      await row.locator('button.resend').click();
      await hook.receivedCount(3);
      // Seen soon after the attempt was due, well before the ended page's slow refresh (5 s).
      await expect.poll(() => row.locator('.badge').textContent(), { timeout: 3_000 }).toBe('delivered');
      expect(await row.locator('.attempts').textContent()).toBe('500 · 500 · 200');
    } finally {
      await hook.close();
    }
  });

  it("lists a task's files as downloads, whose names a task wrote stay text", async () => {
    stack = await startStack({ rules: [{ reply: { content: 'done' } }] });
    const name = '<img src=x onerror="window.__xss=4">.txt';
    const [taskId] = await stack.submit([
      {
        prompt: 'files',
        agent: 'coder',
        files: [
          { path: 'report/data.csv', content: Buffer.from('a,b\n1,2\n').toString('base64') },
          { path: name, content: Buffer.from('x').toString('base64') },
        ],
      },
    ]);
    await waitForEnd(stack.api.url, taskId!);
    await open(`${stack.api.url}/#/tasks/${taskId}`);
    const links = page.locator('.files li a');
    await expect.poll(() => links.count()).toBe(2);
    expect(await links.allTextContents()).toEqual([name, 'report/data.csv']);
    const [download] = await Promise.all([page.waitForEvent('download'), links.nth(1).click()]);
    expect(download.suggestedFilename()).toBe('data.csv');
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    const [archive] = await Promise.all([page.waitForEvent('download'), page.locator('a.download-all').click()]);
    expect(archive.suggestedFilename()).toBe(`${taskId}.tar.gz`);
  });

  it('shows calls awaiting approval readably, as text, and approves one and rejects another', async () => {
    const content = '<img src=x onerror="window.__xss=6">\nline two';
    stack = await startStack({
      rules: [
        {
          match: (request) => toolResults(request) === 0,
          reply: {
            toolCalls: [
              { id: 'w1', name: 'write_file', arguments: { path: 'page.html', content } },
              { id: 'b1', name: 'bash', arguments: { command: 'cat page.html | wc -l' } },
            ],
          },
        },
        {
          reply: (request) => ({
            content: request.messages
              .filter((message) => message.role === 'tool')
              .map((message) => String(message.content))
              .join(' / '),
          }),
        },
      ],
      env: {
        AGENTQ_CONFIG: configFile({
          agents: {
            careful: {
              description: 'asks first',
              instructions: 'Work.',
              tools: ['write_file', 'bash'],
              approvals: { rules: [{ tool: 'write_file' }, { tool: 'bash' }] },
            },
          },
        }),
      },
    });
    const [taskId] = await stack.submit([{ prompt: 'write it', agent: 'careful' }]);
    await open(`${stack.api.url}/#/tasks/${taskId}`);
    await page.waitForSelector('.approval[data-call="w1"] button.approve');
    // A file's content is shown as the file, line by line, as text.
    expect(await page.locator('.approval[data-call="w1"] pre.arguments').textContent()).toBe(
      `path: page.html\ncontent:\n${content}`,
    );
    expect(await page.locator('.approvals img').count()).toBe(0);
    expect(await page.locator('.approval[data-call="b1"] .muted').textContent()).toBe('every bash call');
    await page.click('.approval[data-call="w1"] button.approve');
    await page.waitForSelector('.approval[data-call="w1"] .decision');
    await page.fill('.approval[data-call="b1"] input.reason', 'no shell today');
    await page.click('.approval[data-call="b1"] button.reject');
    await page.waitForSelector('.task-summary .badge[data-status="completed"]');
    expect(await page.locator('#task-result').textContent()).toMatch(/^Wrote .* \/ Not run: .*no shell today/);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
  });

  it('shows a 20-step task as a trace of folded steps, a page of a few screens', async () => {
    stack = await startStack({
      rules: [
        {
          match: (request) => toolResults(request) < 19,
          reply: (request) => ({
            content: `Step ${toolResults(request) + 1}: checking the next file.`,
            toolCalls: [{ name: 'bash', arguments: { command: `seq 1 30; echo file ${toolResults(request) + 1}` } }],
          }),
        },
        { reply: { content: 'All twenty steps done.' } },
      ],
    });
    const [taskId] = await stack.submit([{ prompt: 'twenty steps', agent: 'coder' }]);
    await waitForEnd(stack.api.url, taskId!);
    await open(`${stack.api.url}/#/tasks/${taskId}`);
    await page.waitForSelector('#timeline .event[data-type="task.completed"]');
    expect(await page.locator('#timeline details.step').count()).toBe(20);
    expect(await page.locator('#timeline details.step[open]').count()).toBe(1);
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    console.log(`a 20-step task's page: ${height} px (every step folded but the last)`);
    expect(height).toBeLessThan(2_500);
    // A folded step opens on a click, with its call laid out and its output.
    await page.click('#timeline details.step[data-step="7"] > summary');
    const seventh = page.locator('#timeline details.step[data-step="7"]');
    expect(await seventh.locator('pre.arguments').textContent()).toBe('command: seq 1 30; echo file 7');
    expect(await seventh.locator('.tool-result').textContent()).toContain('file 7');
  });

  it('says what a queued task waits for: its concurrency key, as text', async () => {
    stack = await startStack({ rules: [{ reply: { content: 'slow', delayMs: 30_000 } }], pools: ['casual'] });
    const key = '<b onmouseover="window.__xss=7">user</b>';
    const [first, second] = await stack.submit(
      ['first', 'second'].map((prompt) => ({ prompt, agent: 'casual', concurrencyKey: key })),
    );
    await open(`${stack.api.url}/#/tasks/${second}`);
    const waits = page.locator('.waits-for-key');
    await waits.waitFor();
    expect(await waits.locator('code').textContent()).toBe(key);
    expect(await waits.locator('b').count()).toBe(0);
    expect(await page.locator('.concurrency-key').textContent()).toBe(`${key} (limit 1)`);
    for (const id of [first, second]) await fetch(`${stack.api.url}/v1/tasks/${id}/cancel`, { method: 'POST' });
  });

  it("shows a streaming agent's answer forming, as text, until its step's answer is in", async () => {
    const answer = 'forming <b onmouseover="window.__xss=5">bold</b> '.repeat(40);
    stack = await startStack({
      rules: [{ reply: { content: answer, chunkDelayMs: 30 } }],
      env: {
        AGENTQ_CONFIG: configFile({
          agents: { talker: { description: 'talks', instructions: 'Answer.', tools: [], stream: true } },
        }),
      },
    });
    const [taskId] = await stack.submit([{ prompt: 'talk', agent: 'talker' }]);
    await open(`${stack.api.url}/#/tasks/${taskId}`);
    const forming = page.locator('pre.forming');
    // A page that opens mid-answer shows it from then on: what it shows is part of the answer, as text.
    await expect
      .poll(async () => ((await forming.textContent()) ?? '').length, { timeout: 15_000 })
      .toBeGreaterThan(60);
    const shown = (await forming.textContent())!;
    expect(answer.includes(shown.slice(0, 40))).toBe(true);
    expect(shown).toContain('<b onmouseover=');
    expect(await forming.locator('b').count()).toBe(0);
    await page.waitForSelector('.task-summary .badge[data-status="completed"]');
    await expect.poll(() => forming.isHidden()).toBe(true);
  });

  it('lists the schedules with their next run, and pauses and deletes one', async () => {
    stack = await startStack({ pools: [] });
    const created = await fetch(`${stack.api.url}/v1/schedules`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ cron: '0 9 * * 1', task: { prompt: '<b>weekly</b> report', agent: 'casual' } }),
    });
    const { id } = (await created.json()) as { id: string };
    await open(`${stack.api.url}/#/schedules`);
    const row = page.locator(`tr[data-schedule="${id}"]`);
    await row.waitFor();
    expect(await row.locator('td').nth(4).textContent()).toBe('<b>weekly</b> report');
    expect(await row.locator('.next').textContent()).not.toContain('paused');
    await row.locator('button.pause').click();
    await expect.poll(() => row.locator('.next').textContent()).toContain('paused');
    expect((await getJson<{ paused: boolean }>(`${stack.api.url}/v1/schedules/${id}`)).body.paused).toBe(true);
    page.once('dialog', (dialog) => void dialog.accept());
    await row.locator('button.delete').click();
    await expect.poll(() => row.count()).toBe(0);
    expect((await fetch(`${stack.api.url}/v1/schedules/${id}`)).status).toBe(404);
  });

  it('follows a task again once its stream is let in: a 429 or 503 is waited out, not the end of the view', async () => {
    stack = await startStack({ pools: [], env: tenantsEnv({ '*': { limits: { sseStreams: 1 } } }) });
    const [taskId] = await stack.submit([{ prompt: 'followed later', agent: 'casual' }]);
    // Another client holds the only stream this tenant may have. Its response is kept referenced until
    // it is let go: fetch closes the connection of a response that is garbage collected.
    const other = new AbortController();
    const held = await fetch(`${stack.api.url}/v1/tasks/${taskId}/events`, {
      headers: { accept: 'text/event-stream' },
      signal: other.signal,
    });
    expect(held.status).toBe(200);
    page = await browser.newPage();
    await page.clock.install();
    const answers: number[] = [];
    page.on(
      'response',
      (response) => response.url().includes(`/v1/tasks/${taskId}/events`) && answers.push(response.status()),
    );
    await page.goto(`${stack.api.url}/#/tasks/${taskId}`);
    await expect.poll(() => answers).toEqual([429]);
    other.abort();
    await held.body?.cancel().catch(() => undefined);
    const sseClients = async () =>
      Number(/^agentq_sse_clients (\d+)/m.exec(await (await fetch(`${stack!.api.url}/metrics`)).text())?.[1]);
    await expect.poll(sseClients).toBe(0);
    // Its Retry-After (5 s) passes: the page opens the stream again, and gets it.
    await page.clock.runFor(5_000);
    await expect.poll(() => answers).toEqual([429, 200]);
    const cancelled = await fetch(`${stack.api.url}/v1/tasks/${taskId}/cancel`, { method: 'POST' });
    expect(cancelled.status).toBe(202);
    await page.waitForSelector('.task-summary .badge[data-status="cancelled"]');
  });

  it('watches a batch as one: its tasks, why one failed, a bulk cancel of what has not ended, then deletes them', async () => {
    stack = await startStack({
      pools: ['casual'],
      rules: [
        {
          match: (request) => promptOf(request).startsWith('fail'),
          reply: { error: { status: 400, message: 'the model refused this one' } },
        },
        { match: (request) => promptOf(request).startsWith('slow'), reply: { content: 'too late', delayMs: 30_000 } },
        { reply: { content: 'ok' } },
      ],
    });
    // Another batch, from elsewhere, that the filter leaves out.
    await stack.submit([{ prompt: 'elsewhere', agent: 'casual' }]);
    await open(`${stack.api.url}/#/tasks`);
    page.on('dialog', (dialog) => void dialog.accept());
    await page.selectOption('#batch-agent', 'casual');
    await page.fill('#batch-text', 'fail at once\nslow: one\nslow: two');
    await page.click('#batch-submit');
    await page.waitForFunction(() => location.hash.startsWith('#/tasks?batch=web-'));
    const batch = decodeURIComponent(await page.evaluate(() => location.hash.split('batch=')[1]!));
    expect(await page.inputValue('#batch-filter')).toBe(batch);
    await page.waitForFunction(() => document.querySelectorAll('tr.task-row').length === 3);
    await page.waitForSelector('tr.task-row td.status .reason');
    expect(await page.locator('tr.task-row td.status .reason').textContent()).toMatch(
      /^error: The LLM endpoint http:\/\/127\.0\.0\.1:\d+\/v1 /,
    );
    expect(await page.locator('tr.task-row td.status .reason').getAttribute('title')).toContain(
      'the model refused this one',
    );
    await page.waitForFunction(
      () => document.querySelectorAll('tr.task-row .badge[data-status="running"]').length === 2,
    );
    // The batch as one: its totals and progress, and each row's batch and model.
    await expect
      .poll(() => page.locator('#batch-totals .totals').textContent())
      .toMatch(/^\s*3 tasks\s*1 ended \(33%\)\s*(1 failed\s*2 running|2 running\s*1 failed)\s*0 tokens · \$0\s*$/);
    expect(await page.locator('#batch-totals progress').evaluate((bar) => (bar as HTMLProgressElement).value)).toBe(1);
    expect(await page.locator('tr.task-row td.batch').first().textContent()).toBe(batch);
    expect(await page.locator('tr.task-row td.model').allTextContents()).toContain('test-model');
    // The rows are patched in place: a selection in the list survives its next refresh.
    await page.evaluate(() =>
      window.getSelection()!.selectAllChildren(document.querySelector('tr.task-row td.prompt')!),
    );
    const selected = await page.evaluate(() => window.getSelection()!.toString());
    await page.waitForResponse(
      (response) => response.url().includes('/v1/tasks?') && response.url().includes('batch='),
    );
    const refreshed = await page.waitForResponse(
      (response) => response.url().includes('/v1/tasks?') && response.url().includes('batch='),
    );
    expect(await page.evaluate(() => window.getSelection()!.toString())).toBe(selected);
    // The list asks for summaries: a result is not shown there, and may be megabytes at every refresh.
    expect(new URL(refreshed.url()).searchParams.get('fields')).toBe('summary');
    expect(((await refreshed.json()) as { tasks: object[] }).tasks.some((task) => 'result' in task)).toBe(false);
    await page.evaluate(() => window.getSelection()!.removeAllRanges());
    await page.click('#bulk-cancel');
    await page.waitForFunction(
      () => document.querySelectorAll('tr.task-row .badge[data-status="cancelled"]').length === 2,
    );
    expect(await page.locator('#bulk-message').textContent()).toBe('Cancelled 2 tasks.');
    await page.screenshot({ path: `${ARTIFACTS}dashboard-batch.png` });

    // One deleted from its own page (after the confirmation), which then shows the list; the rest in bulk.
    const ids = (
      await getJson<{ tasks: TaskView[] }>(`${stack.api.url}/v1/tasks?batch=${encodeURIComponent(batch)}`)
    ).body.tasks.map((task) => task.id);
    await page.click('tr.task-row >> text=slow: one');
    await page.waitForSelector('.task-summary .badge[data-status="cancelled"]');
    const gone = decodeURIComponent(await page.evaluate(() => location.hash.slice('#/tasks/'.length)));
    await page.click('#delete-task');
    await page.waitForFunction(() => location.hash === '#/tasks');
    expect((await fetch(`${stack.api.url}/v1/tasks/${gone}`)).status).toBe(404);
    await page.fill('#batch-filter', batch);
    await page.press('#batch-filter', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('tr.task-row').length === 2);
    await page.click('#bulk-delete');
    await page.waitForFunction(() => document.querySelectorAll('tr.task-row').length === 0);
    expect(await page.locator('#bulk-message').textContent()).toBe('Deleted 2 tasks.');
    expect(await Promise.all(ids.map(async (id) => (await fetch(`${stack!.api.url}/v1/tasks/${id}`)).status))).toEqual([
      404, 404, 404,
    ]);
    // The other batch's task stays.
    expect(
      (await getJson<{ tasks: TaskView[] }>(`${stack.api.url}/v1/tasks`)).body.tasks.map((task) => task.prompt),
    ).toEqual(['elsewhere']);
    expect(pageErrors).toEqual([]);
  });

  it('compares a batch side by side by model, and forks a step from the timeline into a new task that links back', async () => {
    stack = await startStack({
      pools: ['casual', 'file'],
      env: { AGENTQ_CONFIG: configFile({ models: { 'model-b': {} } }) },
      rules: [
        {
          match: (request) => request.model === 'model-b' && promptOf(request).startsWith('write'),
          reply: { content: 'the fork answers' },
        },
        {
          match: (request) => promptOf(request).startsWith('write') && toolResults(request) === 0,
          reply: { toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'one' } }] },
        },
        { match: (request) => promptOf(request).startsWith('write'), reply: { content: 'the source answers' } },
        { reply: (request) => ({ content: `answered by ${request.model}` }) },
      ],
    });
    // Each prompt once on each model, from the submit form.
    await open(`${stack.api.url}/#/tasks`);
    await page.selectOption('#batch-agent', 'casual');
    await page.fill('#batch-text', 'name a colour\nname a fruit');
    await page.fill('#batch-models', 'test-model, model-b');
    await page.click('#batch-submit');
    await page.waitForFunction(() => location.hash.startsWith('#/tasks?batch=web-'));
    await page.waitForFunction(
      () => document.querySelectorAll('#model-comparison td.compare-cell .badge[data-status="completed"]').length === 4,
    );
    expect(await page.locator('#model-comparison thead th.model').allTextContents()).toEqual(['model-b', 'test-model']);
    expect(await page.locator('#model-comparison tbody tr').count()).toBe(2);
    expect(stack.double.requests.map((request) => request.model).sort()).toEqual([
      'model-b',
      'model-b',
      'test-model',
      'test-model',
    ]);
    await page.screenshot({ path: `${ARTIFACTS}dashboard-compare.png` });

    const [source] = await stack.submit([{ prompt: 'write a file, then answer', agent: 'file' }]);
    await waitForEnd(stack.api.url, source!);
    await page.goto(`${stack.api.url}/#/tasks/${source}`);
    await page.click('button.fork[data-step="2"]');
    await page.fill('.fork-form:visible textarea', 'Answer once more.');
    await page.fill('.fork-form:visible input[name="model"]', 'model-b');
    await page.click('.fork-form:visible button[type="submit"]');
    await page.waitForFunction((id) => location.hash.startsWith('#/tasks/') && !location.hash.endsWith(id), source!);
    await page.waitForSelector('.task-summary .badge[data-status="completed"]');
    expect(await page.locator('.fork-of').textContent()).toBe(`${source!.slice(0, 8)}, step 2`);
    expect(await page.locator('dd.model').textContent()).toBe('model-b');
    expect(await page.locator('.task-summary').textContent()).toContain('the fork answers');
    await page.screenshot({ path: `${ARTIFACTS}dashboard-fork.png` });
    expect(pageErrors).toEqual([]);
  });

  it("opens on the overview: a batch's tasks by status, the hour's jobs, tokens per model, failures and pools", async () => {
    stack = await startStack({
      pools: ['casual'],
      rules: [
        {
          match: (request) => promptOf(request).startsWith('fail'),
          reply: { error: { status: 400, message: 'not this one' } },
        },
        {
          match: (request) => promptOf(request).startsWith('long'),
          reply: { content: 'took a while', delayMs: 300, usage: { promptTokens: 900, completionTokens: 100 } },
        },
        { reply: { content: 'ok', usage: { promptTokens: 10, completionTokens: 2 } } },
      ],
      // The batch fills the tenant's stored tasks; its tokens count against a daily limit.
      env: tenantsEnv({ '*': { limits: { stored: 5 } }, default: { limits: { tokensPerDay: 100_000 } } }),
    });
    const ids = await stack.submit(
      ['ok 1', 'ok 2', 'long 1', 'fail 1', 'fail 2'].map((prompt) => ({ prompt, agent: 'casual' })),
    );
    await Promise.all(ids.map((id) => waitForEnd(stack!.api.url, id)));
    // The worker adds the jobs it counted once a second (finished-jobs.ts).
    const jobs = async () => {
      const { perMinute } = (
        await getJson<{ perMinute: { completed: number[]; failed: number[] } }>(`${stack!.api.url}/v1/overview`)
      ).body;
      return [...perMinute.completed, ...perMinute.failed].reduce((sum, count) => sum + count, 0);
    };
    await expect.poll(jobs, { timeout: 5_000 }).toBe(5);
    await open(stack.api.url);
    await page.waitForSelector('#overview .tiles');
    expect(await page.locator('.tile[data-status="completed"] .count').textContent()).toBe('3');
    expect(await page.locator('.tile[data-status="failed"] .count').textContent()).toBe('2');
    // The hour's bars add up to the batch: 3 completed and 2 failed jobs, with axes and a unit.
    const bars = await page.locator('.time-chart.bars rect title').allTextContents();
    const total = (name: string) =>
      bars
        .filter((title) => title.startsWith(`${name}:`))
        .reduce((sum, title) => sum + Number(/: (\d+)/.exec(title)![1]), 0);
    expect([total('completed'), total('failed')]).toEqual([3, 2]);
    expect(await page.locator('.time-chart.bars .unit').textContent()).toBe('jobs/min');
    expect(await page.locator('.time-chart.line .unit').textContent()).toBe('%');
    // Tokens per model, from the newest ended tasks.
    expect(await page.locator('table.models tbody tr td').allTextContents()).toEqual([
      'test-model',
      '5',
      '3',
      String(900 + 2 * 10),
      String(100 + 2 * 2),
      '$0',
      expect.stringMatching(/ms|s$/),
    ]);
    expect(await page.locator('table.failures tbody tr td').first().textContent()).toBe('error');
    expect(await page.locator('table.failures tbody tr td.num').textContent()).toBe('2');
    expect(await page.locator('table.slowest tbody tr').first().textContent()).toContain('long 1');
    expect(await page.locator('table.costliest tbody tr').first().textContent()).toContain('1000 tokens');
    expect(await page.locator('.pools-table tr[data-pool="casual"] td').nth(5).textContent()).toBe('1');
    // The tenant against its limits: its stored tasks reached (as the next submit would find), its tokens counted.
    const usageRow = async (limit: string, index = 0) =>
      (
        await page
          .locator(`.usage[data-tenant="default"] tr[data-limit="${limit}"]`)
          .nth(index)
          .locator('td')
          .allTextContents()
      )
        .slice(0, 3)
        .map((text) => text.trim());
    expect(await usageRow('unfinished')).toEqual(['Tasks not ended', '0', 'of 100,000']);
    expect(await usageRow('stored')).toEqual(['Tasks stored', '5', 'of 5']);
    expect(await page.locator('.usage[data-tenant="default"] tr[data-limit="stored"]').getAttribute('class')).toBe(
      'reached',
    );
    expect(await page.locator('.usage[data-tenant="default"] tr[data-limit="stored"] .badge').textContent()).toBe(
      'reached',
    );
    expect(await usageRow('writtenBytes')).toEqual([
      'Written to Redis',
      expect.stringMatching(/^\d+\.\d KiB$/),
      'no limit',
    ]);
    expect(await usageRow('daily')).toEqual([
      'Tokens today',
      (900 + 100 + 2 * (10 + 2)).toLocaleString('en-US'),
      'of 100,000',
    ]);
    expect(await page.locator('.usage[data-tenant="default"] .refused').textContent()).toMatch(
      /^New tasks are refused while a limit is reached/,
    );
    const refused = await fetch(`${stack.api.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tasks: [{ prompt: 'one more', agent: 'casual' }] }),
    });
    expect(refused.status).toBe(429);
    await page.screenshot({ path: `${ARTIFACTS}dashboard-overview.png`, fullPage: true });
    // At phone width nothing is wider than the screen.
    await page.setViewportSize({ width: 390, height: 800 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.goto(`${stack.api.url}/#/tasks/${ids[2]}`);
    await page.waitForSelector('#task-result');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    expect(pageErrors).toEqual([]);
  });
});
