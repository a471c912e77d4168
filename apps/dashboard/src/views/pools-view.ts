/** Per pool: queue depth, jobs per minute, workers online and concurrency, and recent throughput. */
import { request, type Pool, type PoolIsolation } from '../api.js';
import { h, replaceChildren, svg } from '../dom.js';
import { ago } from '../format.js';

export function poolsView(container: HTMLElement, signal: AbortSignal): void {
  const body = h('div', { class: 'pools' }, 'Loading…');
  const rawView = h('p', { class: 'muted' });
  replaceChildren(container, rawView, body);
  // bull-board is for admins only: a tenant's key would get a 403 there.
  void request<{ admin: boolean }>('/v1/me', { signal })
    .then(
      (me) =>
        me.admin &&
        replaceChildren(
          rawView,
          'Raw BullMQ view: ',
          h('a', { href: '/admin/queues', target: '_blank' }, '/admin/queues'),
        ),
    )
    .catch(() => undefined);
  const refresh = async () => {
    try {
      const { pools } = await request<{ pools: Pool[] }>('/v1/pools', { signal });
      replaceChildren(body, ...pools.map(poolCard));
    } catch (error) {
      if (!signal.aborted)
        replaceChildren(body, h('p', { class: 'error' }, `Could not load the pools: ${(error as Error).message}`));
    }
  };
  void refresh();
  const timer = window.setInterval(() => void refresh(), 3_000);
  signal.addEventListener('abort', () => window.clearInterval(timer));
}

function poolCard(pool: Pool): HTMLElement {
  const stat = (label: string, value: number | string, kind = '') =>
    h('div', { class: `stat ${kind}` }, h('div', { class: 'value' }, value), h('div', { class: 'label' }, label));
  return h(
    'section',
    { class: 'card pool', 'data-pool': pool.name },
    h(
      'div',
      { class: 'title-row' },
      h('h2', {}, pool.name),
      ...pool.isolation.map(isolationBadge),
      h('span', { class: 'spacer' }),
      h(
        'span',
        { class: 'muted' },
        `${pool.workersOnline} worker${pool.workersOnline === 1 ? '' : 's'} online · concurrency ${pool.concurrency}`,
      ),
    ),
    h(
      'div',
      { class: 'stats' },
      stat('waiting', pool.counts.waiting),
      stat("for their tenant's turn", pool.counts.admission),
      stat('active', pool.counts.active, 'active'),
      stat('delayed', pool.counts.delayed),
      stat('failed', pool.counts.failed, pool.counts.failed ? 'failed' : ''),
      stat('jobs this minute', pool.jobsPerMinute),
    ),
    sparkline(pool.throughput),
    ...pool.isolation.filter((one) => one.kind === 'none' || one.kind === 'unavailable').map(isolationWarning),
    pool.workers.length
      ? h(
          'ul',
          { class: 'workers' },
          ...pool.workers.map((worker) =>
            h('li', { class: 'mono' }, `${worker.id} · ${worker.concurrency} at once · seen ${ago(worker.lastSeen)}`),
          ),
        )
      : pool.workersOnline
        ? h('p', { class: 'muted' }, `${pool.workersOnline} worker process${pool.workersOnline === 1 ? '' : 'es'}`)
        : h(
            'p',
            { class: 'muted' },
            'No worker serves this pool: start one with `agentq worker --pools ' + pool.name + '`.',
          ),
  );
}

/** A short label of how a pool's process tools run. */
/** How a pool's tools run, as a badge (the overview shows it too). */
export function isolationBadge(isolation: PoolIsolation): HTMLElement | string {
  switch (isolation.kind) {
    case 'jail':
      return h(
        'span',
        { class: 'badge isolation-jail', title: 'bash, python and node run in a bubblewrap jail' },
        isolation.network === 'egress' ? 'jailed · internet' : 'jailed',
      );
    case 'none':
      return h('span', { class: 'badge isolation-none' }, 'no jail');
    case 'unavailable':
      return h('span', { class: 'badge isolation-none' }, 'tools refused');
    case 'not-needed':
      return '';
  }
}

function isolationWarning(isolation: PoolIsolation): HTMLElement {
  return h(
    'p',
    { class: 'error isolation-warning' },
    isolation.kind === 'none'
      ? "AGENTQ_SANDBOX=none: this pool runs bash, python and node without a jail, as the worker's user. A task's code can read what that user can and reach the network and Redis."
      : `This pool refuses bash, python and node: the jail cannot run on its worker (${isolation.kind === 'unavailable' ? isolation.reason : ''}).`,
  );
}

function sparkline(points: number[]): SVGElement {
  const width = 300;
  const height = 48;
  const max = Math.max(1, ...points);
  const step = width / Math.max(1, points.length - 1);
  const path = points
    .map(
      (value, index) =>
        `${index ? 'L' : 'M'}${(index * step).toFixed(1)},${(height - 4 - (value / max) * (height - 8)).toFixed(1)}`,
    )
    .join(' ');
  return svg(
    'svg',
    {
      class: 'sparkline',
      viewBox: `0 0 ${width} ${height}`,
      preserveAspectRatio: 'none',
      role: 'img',
      'aria-label': `Jobs per minute over the last ${points.length} minutes`,
    },
    svg('title', {}, `Jobs per minute, last ${points.length} minutes: ${points.join(', ')}`),
    svg('path', { d: `${path} L${width},${height} L0,${height} Z`, class: 'area' }),
    svg('path', { d: path, class: 'line' }),
  );
}
