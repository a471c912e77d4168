/**
 * A file's modification time as the files routes show it. A task's code dates its files as it likes,
 * and tmpfs and btrfs keep 64-bit seconds: `touch -d @100000000000000` is the year 3,170,843, past
 * what a JavaScript Date holds (its toISOString throws), RFC 3339 writes (years 1 to 9999), or tar's
 * own time field (tar-stream writes a 32-bit count of seconds: 2038 at most, 1970 at least).
 */

/** The first and last moments an RFC 3339 date (and every client's date type) can say. */
const EARLIEST_MS = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST_MS = Date.parse('9999-12-31T23:59:59.999Z');
/** The most seconds tar's own time field holds, as tar-stream writes it. */
const TAR_LATEST_SECONDS = 2 ** 31 - 1;

/**
 * A time (`stats.mtimeMs`) as an RFC 3339 date: one outside years 1 to 9999 as the nearest it can say.
 * @example shownFileTime(1e17) // '9999-12-31T23:59:59.999Z'
 */
export function shownFileTime(ms: number): string {
  return new Date(Number.isNaN(ms) ? 0 : Math.min(Math.max(ms, EARLIEST_MS), LATEST_MS)).toISOString();
}

/**
 * A time for a tar header: its own field, and, when that cannot hold it, the exact second as a pax
 * `mtime` (which GNU tar and bsdtar read instead).
 * @example tarFileTime(4102444800000) // { mtime: 2038-01-19T03:14:07.000Z, pax: { mtime: '4102444800' } }
 */
export function tarFileTime(ms: number): { mtime: Date; pax?: Record<string, string> } {
  const seconds = Number.isNaN(ms) ? 0 : Math.floor(ms / 1000);
  const held = Math.min(Math.max(seconds, 0), TAR_LATEST_SECONDS);
  return { mtime: new Date(held * 1000), ...(held === seconds ? {} : { pax: { mtime: String(seconds) } }) };
}
