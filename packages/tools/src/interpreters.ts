/**
 * Tool interpreters resolved once at start-up to a real binary. A version-manager shim (pyenv's
 * `python3`) costs ~100 ms per call; the binary it points at costs ~20 ms.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export interface Interpreters {
  bash: string;
  python: string;
  node: string;
}

let cached: Interpreters | undefined;

export function resolveInterpreters(): Interpreters {
  cached ??= { bash: resolveBash(), python: resolvePython(), node: process.execPath };
  return cached;
}

function resolveBash(): string {
  return existsSync('/bin/bash') ? '/bin/bash' : 'bash';
}

function resolvePython(): string {
  try {
    // Asking python itself sees through shims to the interpreter that really runs.
    return execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], {
      encoding: 'utf8',
      timeout: 10_000,
    }).trim();
  } catch {
    return 'python3';
  }
}
