/**
 * Where a running `agentq api` listens, for `agentq doctor`: each API writes it to `<data>/api.json`
 * when it is ready (its port may differ from PORT: PORT=0 takes a free one), and removes it when it
 * stops. Read only while its process lives and answers there.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '@agentq/config';

interface ApiAddress {
  pid: number;
  url: string;
  listening: string;
}

const file = (config: Config) => path.resolve(config.AGENTQ_DATA_DIR, 'api.json');

/**
 * Written by a ready API, where it can (an API needs no data directory of its own: one it cannot write
 * to only leaves doctor without its address); removed when it stops.
 */
export function writeApiAddress(config: Config, address: Omit<ApiAddress, 'pid'>): () => void {
  const where = file(config);
  try {
    mkdirSync(path.dirname(where), { recursive: true });
    writeFileSync(where, JSON.stringify({ pid: process.pid, ...address }));
  } catch {
    return () => undefined;
  }
  return () => rmSync(where, { force: true });
}

/** The API that runs with this data directory, if one answers where it said it listens. */
export async function runningApi(config: Config): Promise<ApiAddress | undefined> {
  try {
    const address = JSON.parse(readFileSync(file(config), 'utf8')) as ApiAddress;
    process.kill(address.pid, 0);
    const answer = await fetch(`${address.url}/healthz`, { signal: AbortSignal.timeout(1_000) });
    return answer.ok ? address : undefined;
  } catch {
    return undefined;
  }
}
