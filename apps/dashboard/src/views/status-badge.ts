import { h } from '../dom.js';

export function statusBadge(status: string): HTMLSpanElement {
  return h('span', { class: `badge status-${status}`, 'data-status': status }, status);
}
