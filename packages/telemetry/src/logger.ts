/**
 * Every process's log: one JSON object per line on stdout (pino), with an ISO time, the level's name,
 * the process's name, and the fields of the line (a task id, a route, a duration...). On a terminal
 * the same lines are shown human-readable (pino-pretty, in this thread). Secrets never reach a line:
 * the fields that could hold one are redacted, and prompts are logged only when asked for.
 */
import { hostname } from 'node:os';
import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';
import { PinoPretty } from 'pino-pretty';
import { terminalSafeJson } from './terminal-safe.js';

export type { Logger };
export type LogLevel = LevelWithSilent;
export type LogFormat = 'auto' | 'json' | 'pretty';

/**
 * Fields that may hold a secret: replaced before the line is written. No line of ours has them; this is
 * the net under a mistake. Named paths only: a wildcard doubles what every line costs.
 */
const REDACTED = [
  'apiKey',
  'key',
  'password',
  'authorization',
  'cookie',
  'headers.authorization',
  'headers.cookie',
  'headers["x-api-key"]',
  'err.headers.authorization',
];
/**
 * Lines are written asynchronously: a slow reader of stdout (a full pipe) must not stop the event loop
 * (a sync write blocks until it drains). What is buffered is flushed at exit; past 16 MiB unread, lines
 * are dropped rather than memory spent.
 */
const STDOUT = { fd: 1, sync: false, maxLength: 16 * 1024 * 1024 };

export interface LoggerOptions {
  /** The process's name on every line, e.g. `agentq-api`. */
  name: string;
  /** Default `info`. */
  level?: LogLevel;
  /** `auto` (default): pretty when stdout is a terminal, JSON lines otherwise. */
  format?: LogFormat;
  /** Fields on every line (e.g. the worker's id). */
  base?: Record<string, unknown>;
  /** Where lines go. Default: stdout (pretty or JSON, by `format`). */
  destination?: DestinationStream;
}

/** Whether `format` comes out human-readable here. */
export function prettyLogs(format: LogFormat = 'auto'): boolean {
  return format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
}

type Stdout = ReturnType<typeof pino.destination>;
/**
 * The stdout stream of each logger `createLogger` made to write there asynchronously, and its own `end`:
 * pino replaces it with a no-op once a write failed for want of a reader (EPIPE).
 */
const stdoutStreams = new WeakMap<Logger, { stream: Stdout; end: Stdout['end'] }>();

export function createLogger(options: LoggerOptions): Logger {
  const pretty = prettyLogs(options.format);
  const stdout = (options.destination ?? pretty) ? undefined : pino.destination(STDOUT);
  const destination = options.destination ?? stdout ?? prettyDestination();
  const logger = pino(
    {
      name: options.name,
      level: options.level ?? 'info',
      base: { pid: process.pid, hostname: hostname(), ...options.base },
      timestamp: pino.stdTimeFunctions.isoTime,
      // The level by name ("info"), as log shippers and people read it.
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED, censor: '[redacted]' },
    },
    destination,
  );
  if (stdout) stdoutStreams.set(logger, { stream: stdout, end: stdout.end });
  return logger;
}

/**
 * Human-readable lines (pino-pretty, which colours only a terminal that wants colours: NO_COLOR is
 * honoured). It drops C0 controls from a message but prints the other fields' C1 controls and bidi
 * characters as they are: a line's strings may be a model's or a tool's, so these are escaped first.
 */
export function prettyDestination(to?: NodeJS.WritableStream): DestinationStream {
  const pretty = PinoPretty({
    sync: true,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    ...(to ? { destination: to } : {}),
  });
  return { write: (line: string) => pretty.write(terminalSafeJson(line)) };
}

/**
 * Ends a logger's stdout stream, last thing before the process exits: what it holds is written
 * asynchronously, where a reader that went away (EPIPE: the `agentq start` that forked it killed, a
 * `| tee` stopped) is an error pino stops logging on. Left to pino's flush at exit, it is written
 * synchronously, and sonic-boom 4 retries a failed synchronous write for ever: such a process never
 * exited. Resolves once written (or failed), or after `ms`.
 */
export function endLogs(logger: Logger, ms = 2_000): Promise<void> {
  const { stream, end } = stdoutStreams.get(logger) ?? {};
  // None, or its reader is gone already (nothing more is written, at exit neither).
  if (!stream || stream.end !== end) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      // A line logged after this (a late callback) is dropped, not a write to a closed stream (which throws).
      stream.write = () => true;
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    stream.once('close', done);
    stream.once('error', done);
    try {
      stream.end();
    } catch {
      done();
    }
  });
}
