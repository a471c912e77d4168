/** The dashboard's entry: a hash router over its views, and the API key prompt when one is needed. */
import { request, setApiKey, setUnauthorizedHandler, type Me } from './api.js';
import { h, replaceChildren } from './dom.js';
import { overviewView } from './views/overview-view.js';
import { poolsView } from './views/pools-view.js';
import { schedulesView } from './views/schedules-view.js';
import { taskView } from './views/task-view.js';
import { tasksView } from './views/tasks-view.js';

const app = document.getElementById('app')!;
let current: AbortController | undefined;

function route(): void {
  current?.abort();
  current = new AbortController();
  const hash = location.hash.replace(/^#/, '').split('?')[0] || '/';
  for (const link of document.querySelectorAll('nav a'))
    link.classList.toggle(
      'active',
      (link.getAttribute('href') ?? '') === `#${hash.startsWith('/tasks/') ? '/tasks' : hash}`,
    );
  const task = /^\/tasks\/(.+)$/.exec(hash);
  if (task) taskView(app, decodeURIComponent(task[1]!), current.signal);
  else if (hash === '/pools') poolsView(app, current.signal);
  else if (hash === '/schedules') schedulesView(app, current.signal);
  else if (hash === '/tasks') tasksView(app, current.signal);
  else overviewView(app, current.signal);
}

setUnauthorizedHandler(() => {
  if (document.getElementById('key-dialog')) return;
  const input = h('input', { type: 'password', placeholder: 'API key', id: 'api-key' });
  const dialog = h(
    'form',
    {
      id: 'key-dialog',
      class: 'card key-dialog',
      onsubmit: (event: Event) => {
        event.preventDefault();
        setApiKey(input.value.trim());
        dialog.remove();
        showNav();
        route();
      },
    },
    h('strong', {}, 'This agentq API needs a key.'),
    input,
    h('button', { type: 'submit', class: 'primary' }, 'Use key'),
  );
  document.body.prepend(dialog);
});

window.addEventListener('hashchange', route);
/** The menu; bull-board opens only for an admin key, so its link shows for admins. */
function showNav(): void {
  const nav = document.getElementById('nav')!;
  replaceChildren(
    nav,
    h('a', { href: '#/' }, 'Overview'),
    h('a', { href: '#/tasks' }, 'Tasks'),
    h('a', { href: '#/schedules' }, 'Schedules'),
    h('a', { href: '#/pools' }, 'Pools'),
  );
  // The Queues link is for admins only: a failed check just leaves it out.
  void request<Me>('/v1/me')
    .then((me) => me.admin && nav.append(h('a', { href: '/admin/queues', target: '_blank' }, 'Queues')))
    .catch(() => undefined);
}

showNav();
route();
