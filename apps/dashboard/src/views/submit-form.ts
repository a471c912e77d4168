/** Batch submit from the page: paste prompts (one per line) or JSONL, or pick a .jsonl file; optionally each on several models. */
import { parseBatch, PLANNER_POOL, type PoolView } from '@agentq/contract';
import { request } from '../api.js';
import { h } from '../dom.js';

/** A batch id for what this page submits: when, and a few random letters (`web-20261130-071502-k3x9`). */
function newBatchId(): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `web-${stamp}-${Math.random().toString(36).slice(2, 6)}`;
}

/** `onSubmitted`: the new tasks' ids and their batch (every submit from the page is a batch of its own). */
export function submitForm(onSubmitted: (ids: string[], batch: string) => void): HTMLElement {
  const text = h('textarea', {
    id: 'batch-text',
    rows: 4,
    placeholder: 'One prompt per line, or one JSON task per line: {"prompt": "...", "agent": "coder"}',
  });
  const agent = h('select', { id: 'batch-agent', title: 'Agent' }, h('option', { value: '' }, 'planner (auto)'));
  // The agents are the install's configuration file's: asked of the API, each with what it is for.
  void request<{ pools: PoolView[] }>('/v1/pools')
    .then(({ pools }) => {
      for (const pool of pools)
        if (pool.name !== PLANNER_POOL)
          agent.append(h('option', { value: pool.name, title: pool.description }, pool.name));
    })
    .catch(() => undefined);
  const priority = h('input', {
    id: 'batch-priority',
    type: 'number',
    min: 1,
    max: 10,
    value: 5,
    title: 'Priority: 1 lowest, 10 highest',
  });
  const models = h('input', {
    id: 'batch-models',
    placeholder: 'Models (optional, comma-separated)',
    title: 'Each prompt runs once on each model: the task list then compares them side by side',
    autocomplete: 'off',
  });
  const file = h('input', {
    type: 'file',
    accept: '.jsonl,.txt,application/x-ndjson,text/plain',
    title: 'A .jsonl file',
  });
  const message = h('span', { class: 'form-message', role: 'status' });
  const button = h('button', { type: 'submit', class: 'primary', id: 'batch-submit' }, 'Submit');
  file.addEventListener('change', async () => {
    const chosen = file.files?.[0];
    if (chosen) text.value = await chosen.text();
  });
  const form = h(
    'form',
    {
      class: 'submit-form card',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        message.textContent = '';
        message.className = 'form-message';
        try {
          const parsed = parseBatch(text.value, { agent: agent.value, priority: Number(priority.value) });
          if (parsed.length === 0) throw new Error('Write at least one prompt.');
          // Each prompt once per model named: a batch that compares models on the same prompts.
          const names = models.value
            .split(',')
            .map((name) => name.trim())
            .filter(Boolean);
          const tasks = names.length ? parsed.flatMap((task) => names.map((model) => ({ ...task, model }))) : parsed;
          button.disabled = true;
          const batch = newBatchId();
          const answer = await request<{ tasks: Array<{ id: string }> }>('/v1/tasks', {
            method: 'POST',
            body: { batch, tasks },
          });
          text.value = '';
          message.textContent = `Queued ${answer.tasks.length} task${answer.tasks.length === 1 ? '' : 's'} as batch ${batch}.`;
          onSubmitted(
            answer.tasks.map((task) => task.id),
            batch,
          );
        } catch (error) {
          message.textContent = (error as Error).message;
          message.className = 'form-message error';
        } finally {
          button.disabled = false;
        }
      },
    },
    text,
    h(
      'div',
      { class: 'form-row' },
      h('label', {}, 'Agent ', agent),
      h('label', {}, 'Priority ', priority),
      models,
      file,
      h('span', { class: 'spacer' }),
      message,
      button,
    ),
  );
  return form;
}
