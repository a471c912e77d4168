/**
 * A batch's tasks side by side by model: one row per prompt, one column per model, each cell the
 * task's status, steps, cost and duration. Shown when a batch ran on more than one model (a batch that
 * compares models on the same prompts).
 */
import { html, nothing, type TemplateResult } from 'lit-html';
import type { TaskSummary } from '../api.js';
import { clip, taskDuration, usd } from '../format.js';

export function modelComparison(tasks: readonly TaskSummary[]): TemplateResult | typeof nothing {
  const models = [...new Set(tasks.map((task) => task.model ?? '—'))].sort();
  if (models.length < 2) return nothing;
  const prompts = new Map<string, Map<string, TaskSummary>>();
  // Oldest first, so that a prompt's row keeps its first place; a later task of the same prompt and model wins.
  for (const task of [...tasks].reverse()) {
    const row = prompts.get(task.prompt) ?? new Map<string, TaskSummary>();
    row.set(task.model ?? '—', task);
    prompts.set(task.prompt, row);
  }
  const totals = models.map((model) =>
    tasks
      .filter((task) => (task.model ?? '—') === model)
      .reduce((sum, task) => sum + (task.totalCostUsd ?? task.costUsd), 0),
  );
  return html`<table class="card comparison" id="model-comparison">
    <caption>By model</caption>
    <thead><tr><th>Prompt</th>${models.map((model) => html`<th class="model">${model}</th>`)}</tr></thead>
    <tbody>${[...prompts].map(
      ([prompt, row]) => html`<tr>
      <td class="prompt" title=${prompt}>${clip(prompt, 70)}</td>
      ${models.map((model) => cell(row.get(model)))}
    </tr>`,
    )}</tbody>
    <tfoot><tr><th>Cost</th>${totals.map((total) => html`<td class="num cost">${usd(total)}</td>`)}</tr></tfoot>
  </table>`;
}

function cell(task: TaskSummary | undefined): TemplateResult {
  if (!task) return html`<td class="muted">—</td>`;
  return html`<td class="compare-cell" data-model=${task.model ?? ''}>
    <a href="#/tasks/${encodeURIComponent(task.id)}"><span class="badge status-${task.status}" data-status=${task.status}>${task.status}</span></a>
    <span class="muted">${task.steps} steps · ${usd(task.totalCostUsd ?? task.costUsd)} · ${taskDuration(task) || '—'}</span>
  </td>`;
}
