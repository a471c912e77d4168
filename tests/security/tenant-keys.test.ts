/**
 * An operator's file that gives one key to two tenants: whoever holds it would act as either (the first
 * listed won). The real API refuses to start, naming both tenants and never the key, however the key is
 * given twice: one variable named by both, two variables holding it, or its SHA-256 beside its variable.
 * And a key an HTTP client cannot send as it is written (whitespace around or inside it, a control
 * character, a byte outside printable ASCII): clients trim or refuse it in `Authorization: Bearer`, and
 * keys that differ only in their whitespace look alike. `agentq api`, `agentq start` and `agentq config
 * check` refuse it, naming the place and never the key.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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

/**
 * Starts `agentq <command>` (the API by default) with these tenants, in `cwd` (whose .env it reads);
 * answers what it printed and how it ended (or that it listens).
 */
async function startApi(
  tenants: Record<string, unknown>,
  variables: Record<string, string>,
  options: { command?: string[]; cwd?: string } = {},
) {
  const env = await processEnv({
    prefix: freshPrefix('tenant-keys'),
    dataDir,
    modelURL: 'http://127.0.0.1:9/v1',
    model: 'none',
    extra: { ...variables, AGENTQ_CONFIG: configFile({ tenants }) },
  });
  const api = spawnAgentq(options.command ?? ['api'], env, options.cwd ? { cwd: options.cwd } : {});
  const outcome = await Promise.race([
    api.exited.then((code) => `exited with ${code}`),
    api.waitFor(/listening on http|ready: API at http/, 30_000).then(() => 'listening'),
  ]);
  // SIGTERM: `agentq start` stops the processes it started.
  await api.stop('SIGTERM');
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

describe('a key an HTTP client cannot send as it is written', () => {
  const SECRET = randomBytes(12).toString('hex');
  const cases: Array<[string, string, RegExp]> = [
    ['a leading space', ` ${SECRET}`, /whitespace before or after it/],
    ['a trailing newline', `${SECRET}\n`, /whitespace before or after it/],
    ['a space inside', `${SECRET.slice(0, 8)} ${SECRET.slice(8)}`, /whitespace inside it/],
    ['a tab inside', `${SECRET.slice(0, 8)}\t${SECRET.slice(8)}`, /whitespace inside it/],
    ['a control character', `${SECRET}\u0007`, /a control character/],
    ['a DEL', `${SECRET}\u007f`, /a control character/],
    ['a non-ASCII letter', `${SECRET}é`, /outside printable ASCII/],
    ['a no-break space', `${SECRET}\u00a0x`, /outside printable ASCII/],
  ];
  const tenants = { acme: { keys: [{ env: 'ACME_KEY' }] }, beta: { keys: [{ env: 'BETA_KEY' }] } };
  for (const [name, key, reason] of cases) {
    it(`is refused by agentq api and agentq config check, naming the place and not the key: ${name}`, async () => {
      for (const command of [['api'], ['config', 'check']]) {
        const { outcome, output } = await startApi(tenants, { ACME_KEY: `beta-${SECRET}`, BETA_KEY: key }, { command });
        console.log(`${command.join(' ')}, ${name}: ${outcome}; ${output.trim().split('\n').slice(-2).join(' | ')}`);
        expect(outcome).toBe('exited with 2');
        expect(output).toMatch(/tenants\.beta\.keys\.0: the variable BETA_KEY holds a key/);
        expect(output).toMatch(reason);
        expect(output).toMatch(/openssl rand -hex 32/);
        expect(output).not.toContain(SECRET);
        expect(output).not.toContain(SECRET.slice(8));
      }
    });
  }

  it('is refused by agentq start when the .env writes it in quotes with spaces around', async () => {
    const folder = await mkdtemp(path.join(tmpdir(), 'agentq-tenant-keys-env-'));
    await writeFile(path.join(folder, '.env'), `ACME_KEY=" ${SECRET} "\n`);
    try {
      const { outcome, output } = await startApi(
        { acme: { keys: [{ env: 'ACME_KEY' }] } },
        {},
        { command: ['start'], cwd: folder },
      );
      console.log(`agentq start, a quoted key with spaces in .env: ${outcome}; ${output.trim().split('\n').at(-1)}`);
      expect(outcome).toBe('exited with 2');
      expect(output).toMatch(
        /tenants\.acme\.keys\.0: the variable ACME_KEY holds a key with whitespace before or after it/,
      );
      expect(output).not.toContain(SECRET);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
