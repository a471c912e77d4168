/**
 * The tenant's schedules (an admin's: every tenant's), newest first, a page that grows on demand: when
 * each runs, its next run (or why agentq paused it), its last runs (a task each, or why it skipped);
 * pause, resume, delete.
 */
import { html, render } from 'lit-html';
import { request, type Schedule } from '../api.js';
import { shortId } from '../format.js';

const PAGE = 50;
const MAX_PAGE = 500;

export function schedulesView(container: HTMLElement, signal: AbortSignal): void {
  let message = '';
  let schedules: Schedule[] | undefined;
  /** How many are shown (the first page's size): "Show more" asks for more, up to the API's 500. */
  let shown = PAGE;
  let more = false;
  const act = async (method: string, id: string, body?: unknown) => {
    try {
      await request(`/v1/schedules/${encodeURIComponent(id)}`, { method, ...(body ? { body } : {}) });
      message = '';
    } catch (error) {
      message = (error as Error).message;
    }
    await refresh();
  };
  const draw = () => {
    if (signal.aborted) return;
    render(
      html`<section class="card schedules">
        <h2>Schedules</h2>
        <p class="form-message" role="status">${message}</p>
        ${
          !schedules
            ? html`<p>Loading…</p>`
            : !schedules.length
              ? html`<p class="muted">No schedules. <code>POST /v1/schedules</code> makes one.</p>`
              : html`<table class="tasks">
                  <thead><tr><th>Schedule</th><th>When</th><th>Next run</th><th>Last runs</th><th>Prompt</th><th>Tenant</th><th></th></tr></thead>
                  <tbody>
                    ${schedules.map(
                      (schedule) => html`<tr data-schedule=${schedule.id}>
                        <td class="mono">${schedule.id.slice(0, 12)}</td>
                        <td>${schedule.cron ? `${schedule.cron} (${schedule.timezone})` : `every ${schedule.every! / 1000} s`}</td>
                        <td class="next">${
                          schedule.paused
                            ? html`<span class="badge" title=${schedule.pausedReason ?? ''}>paused</span>
                                ${schedule.pausedReason ? html`<span class="muted paused-reason">${schedule.pausedReason}</span>` : ''}`
                            : schedule.nextRunAt
                              ? new Date(schedule.nextRunAt).toLocaleString()
                              : '—'
                        }</td>
                        <td class="runs">
                          ${schedule.lastRuns
                            .slice(0, 5)
                            .map((run) =>
                              run.taskId
                                ? html`<a class="mono" href="#/tasks/${encodeURIComponent(run.taskId)}">${shortId(run.taskId)}</a> `
                                : html`<span class="muted skipped" title=${run.skipped ?? ''}>skipped</span> `,
                            )}
                        </td>
                        <td>${String(schedule.task.prompt ?? '').slice(0, 80)}</td>
                        <td>${schedule.tenant}</td>
                        <td>
                          <button class="pause" @click=${() => act('PATCH', schedule.id, { paused: !schedule.paused })}>${schedule.paused ? 'Resume' : 'Pause'}</button>
                          <button class="danger delete" @click=${() => window.confirm('Delete this schedule? Its tasks stay.') && act('DELETE', schedule.id)}>Delete</button>
                        </td>
                      </tr>`,
                    )}
                  </tbody>
                </table>
                ${
                  more && shown < MAX_PAGE
                    ? html`<button class="more" @click=${() => {
                        shown = Math.min(MAX_PAGE, shown + PAGE);
                        void refresh();
                      }}>Show more</button>`
                    : ''
                }`
        }
      </section>`,
      container,
    );
  };
  const refresh = async () => {
    try {
      const page = await request<{ schedules: Schedule[]; nextCursor: string | null }>(`/v1/schedules?limit=${shown}`, {
        signal,
      });
      schedules = page.schedules;
      more = page.nextCursor !== null;
    } catch (error) {
      if (signal.aborted) return;
      message = `Could not load the schedules: ${(error as Error).message}`;
    }
    draw();
  };
  container.replaceChildren();
  draw();
  void refresh();
  const timer = window.setInterval(() => void refresh(), 5_000);
  signal.addEventListener('abort', () => window.clearInterval(timer));
}
