/** Per pool: queue depth, jobs per minute, workers online and concurrency, and recent throughput. */
import { request, type Pool } from '../api.js';
import { h, replaceChildren, svg } from '../dom.js';
import { ago } from '../format.js';

export function poolsView(container: HTMLElement, signal: AbortSignal): void {
  const body = h('div', { class: 'pools' }, 'Loading…');
  replaceChildren(container, h('p', { class: 'muted' }, 'Raw BullMQ view: ', h('a', { href: '/admin/queues', target: '_blank' }, '/admin/queues')), body);
  const refresh = async () => {
    try {
      const { pools } = await request<{ pools: Pool[] }>('/v1/pools', { signal });
      replaceChildren(body, ...pools.map(poolCard));
    } catch (error) {
      if (!signal.aborted) replaceChildren(body, h('p', { class: 'error' }, `Could not load the pools: ${(error as Error).message}`));
    }
  };
  void refresh();
  const timer = window.setInterval(() => void refresh(), 3_000);
  signal.addEventListener('abort', () => window.clearInterval(timer));
}

function poolCard(pool: Pool): HTMLElement {
  const stat = (label: string, value: number | string, kind = '') => h('div', { class: `stat ${kind}` }, h('div', { class: 'value' }, value), h('div', { class: 'label' }, label));
  return h(
    'section',
    { class: 'card pool', 'data-pool': pool.name },
    h('div', { class: 'title-row' }, h('h2', {}, pool.name), h('span', { class: 'spacer' }), h('span', { class: 'muted' }, `${pool.workers.length} worker${pool.workers.length === 1 ? '' : 's'} online · concurrency ${pool.concurrency}`)),
    h(
      'div',
      { class: 'stats' },
      stat('waiting', pool.counts.waiting),
      stat('active', pool.counts.active, 'active'),
      stat('delayed', pool.counts.delayed),
      stat('failed', pool.counts.failed, pool.counts.failed ? 'failed' : ''),
      stat('jobs this minute', pool.jobsPerMinute),
    ),
    sparkline(pool.throughput),
    pool.workers.length
      ? h('ul', { class: 'workers' }, ...pool.workers.map((worker) => h('li', { class: 'mono' }, `${worker.id} · ${worker.concurrency} at once · seen ${ago(worker.lastSeen)}`)))
      : h('p', { class: 'muted' }, 'No worker serves this pool: start one with `agentq worker --pools ' + pool.name + '`.'),
  );
}

function sparkline(points: number[]): SVGElement {
  const width = 300;
  const height = 48;
  const max = Math.max(1, ...points);
  const step = width / Math.max(1, points.length - 1);
  const path = points.map((value, index) => `${index ? 'L' : 'M'}${(index * step).toFixed(1)},${(height - 4 - (value / max) * (height - 8)).toFixed(1)}`).join(' ');
  return svg(
    'svg',
    { class: 'sparkline', viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': `Jobs per minute over the last ${points.length} minutes` },
    svg('title', {}, `Jobs per minute, last ${points.length} minutes: ${points.join(', ')}`),
    svg('path', { d: `${path} L${width},${height} L0,${height} Z`, class: 'area' }),
    svg('path', { d: path, class: 'line' }),
  );
}
