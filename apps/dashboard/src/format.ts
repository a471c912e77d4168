/** Small formatters for what the dashboard shows. */

export function shortId(id: string): string {
  const [head, ...rest] = id.split('.');
  return [head!.slice(0, 8), ...rest].join('.');
}

export function duration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function taskDuration(task: { startedAt: string | null; finishedAt: string | null }, now = Date.now()): string {
  if (!task.startedAt) return '';
  const end = task.finishedAt ? Date.parse(task.finishedAt) : now;
  return duration(end - Date.parse(task.startedAt));
}

export function ago(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`;
  return new Date(iso).toLocaleDateString();
}

export function tokens(usage: { promptTokens: number; completionTokens: number } | null | undefined): string {
  if (!usage) return '';
  const total = usage.promptTokens + usage.completionTokens;
  return total >= 10_000 ? `${(total / 1000).toFixed(1)}k` : String(total);
}

/** USD as people read small amounts: `$0.0042`, `$1.27`; `$0` for nothing (a model without a price). */
export function usd(value: number): string {
  if (!value) return '$0';
  return value >= 1 ? `$${value.toFixed(2)}` : `$${value.toPrecision(2).replace(/0+$/, '')}`;
}

export function clip(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

/** A size in bytes, in KiB or MiB. */
export function bytes(value: number): string {
  return value >= 1024 * 1024 ? `${(value / 1024 / 1024).toFixed(1)} MiB` : `${(value / 1024).toFixed(1)} KiB`;
}

/** A call's JSON arguments laid out one per line, each string as its text (a command, a file's content). */
export function readableArguments(text: string): string {
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return text;
    return Object.entries(parsed as Record<string, unknown>)
      .map(([name, value]) => {
        const shown = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
        return shown.includes('\n') ? `${name}:\n${shown}` : `${name}: ${shown}`;
      })
      .join('\n');
  } catch {
    return text;
  }
}
