/**
 * An operator's file that gives one key to two tenants: whoever holds it would act as either (the first
 * listed won). The real API refuses to start, naming both tenants and never the key, however the key is
 * given twice: one variable named by both, two variables holding it, or its SHA-256 beside its variable.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFile } from '../helpers/config-file.js';
import { processEnv, spawnAgentq } from '../helpers/processes.js';
import { freshPrefix } from '../helpers/redis.js';

const KEY = `shared-${randomBytes(12).toString('hex')}`;
const digest = createHash('sha256').update(KEY).digest('hex');
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-tenant-keys-'));
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

/** Starts the API with these tenants; answers what it printed and how it ended (or that it listens). */
async function startApi(tenants: Record<string, unknown>, variables: Record<string, string>) {
  const env = await processEnv({
    prefix: freshPrefix('tenant-keys'),
    dataDir,
    modelURL: 'http://127.0.0.1:9/v1',
    model: 'none',
    extra: { ...variables, AGENTQ_CONFIG: configFile({ tenants }) },
  });
  const api = spawnAgentq(['api'], env);
  const outcome = await Promise.race([
    api.exited.then((code) => `exited with ${code}`),
    api.waitFor(/listening on http/, 30_000).then(() => 'listening'),
  ]);
  await api.stop('SIGKILL');
  return { outcome, output: api.output() };
}

describe('one key listed for two tenants', () => {
  const cases: Array<[string, Record<string, unknown>, Record<string, string>]> = [
    [
      'one variable named by both',
      { acme: { keys: [{ env: 'SHARED_KEY' }] }, beta: { keys: [{ env: 'SHARED_KEY' }] } },
      { SHARED_KEY: KEY },
    ],
    [
      'two variables holding the same key',
      { acme: { keys: [{ env: 'ACME_KEY' }] }, beta: { keys: [{ env: 'OTHER_KEY' }, { env: 'BETA_KEY' }] } },
      { ACME_KEY: KEY, BETA_KEY: KEY, OTHER_KEY: `other-${KEY}` },
    ],
    [
      'its SHA-256 beside its variable',
      { acme: { keys: [{ env: 'ACME_KEY' }] }, beta: { keys: [{ sha256: digest }] } },
      { ACME_KEY: KEY },
    ],
  ];
  for (const [name, tenants, variables] of cases) {
    it(`is refused at start, naming both tenants and not the key: ${name}`, async () => {
      const { outcome, output } = await startApi(tenants, variables);
      console.log(`${name}: ${outcome}; ${output.trim().split('\n').slice(-3).join(' | ').slice(0, 400)}`);
      expect(outcome).toBe('exited with 2');
      expect(output).toMatch(/tenants\.acme\.keys\.0/);
      expect(output).toMatch(/tenants\.beta\.keys\.\d/);
      expect(output).toMatch(/same key/);
      expect(output).not.toContain(KEY);
      expect(output).not.toContain(digest);
    });
  }

  it('still starts when each tenant has a key of its own', async () => {
    const { outcome } = await startApi(
      { acme: { keys: [{ env: 'ACME_KEY' }] }, beta: { keys: [{ env: 'BETA_KEY' }] } },
      { ACME_KEY: KEY, BETA_KEY: `beta-${KEY}` },
    );
    expect(outcome).toBe('listening');
  });
});
