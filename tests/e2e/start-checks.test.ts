/** What `agentq start` says when something it needs is missing, and its private Redis. */
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../setup/redis-server.js';
import { logLines, spawnAgentq, stopSpawned } from '../helpers/processes.js';
import { redisUrl } from '../helpers/redis.js';

let dataDir: string | undefined;
afterEach(async () => {
  await stopSpawned();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

describe('agentq start checks', () => {
  it('says how to configure an LLM endpoint when none is set, and exits', async () => {
    const agentq = spawnAgentq(['start'], { REDIS_URL: redisUrl() });
    expect(await agentq.exited).toBe(2);
    expect(agentq.output()).toMatch(/No LLM endpoint is configured/);
    expect(agentq.output()).toMatch(/Ollama: +OPENAI_BASE_URL=http:\/\/127\.0\.0\.1:11434\/v1/);
  });

  it('names the bad variable of a bad configuration', async () => {
    const agentq = spawnAgentq(['start'], { PORT: 'eighty' });
    expect(await agentq.exited).toBe(2);
    expect(agentq.output()).toMatch(/PORT="eighty"/);
  });

  it('says how to get a Redis when none answers and redis-server is not on the PATH', async () => {
    const agentq = spawnAgentq(['start'], {
      PATH: '/nonexistent',
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      AGENTQ_MODEL: 'm',
    });
    expect(await agentq.exited).toBe(2);
    expect(agentq.output()).toMatch(/Nothing answers at REDIS_URL=.* and redis-server is not on the PATH/);
  });

  it('starts a private redis-server with an append-only file when none answers', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-private-redis-'));
    const redisAt = `redis://127.0.0.1:${await freePort()}`;
    const agentq = spawnAgentq(['start'], {
      PORT: String(await freePort()),
      REDIS_URL: redisAt,
      AGENTQ_DATA_DIR: dataDir,
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      AGENTQ_MODEL: 'm',
    });
    await agentq.waitFor(/started a private redis-server on loopback, with a generated password/);
    const url = (await agentq.waitFor(/ready: API at (http[^\s"]+)/))[1]!;
    expect(await (await fetch(`${url}/readyz`)).json()).toEqual({ status: 'ready' });
    // Nothing answers at the model endpoint here: said at start, naming it.
    expect(logLines(agentq.output())).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        name: 'agentq',
        msg: expect.stringMatching(
          /^the model endpoint http:\/\/127\.0\.0\.1:9\/v1 does not answer \(.+\); tasks wait and then fail until it answers/,
        ),
      }),
    );
    expect(existsSync(path.join(dataDir, 'redis', 'appendonlydir'))).toBe(true);
    // Its password is agentq's alone: a file only its user reads, never printed, and needed.
    const passwordFile = path.join(dataDir, 'redis', 'password');
    expect((await stat(passwordFile)).mode & 0o777).toBe(0o600);
    const password = (await readFile(passwordFile, 'utf8')).trim();
    expect(password.length).toBeGreaterThanOrEqual(32);
    expect(agentq.output()).not.toContain(password);
    const anonymous = new Redis(redisAt, {
      lazyConnect: true,
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    anonymous.on('error', () => undefined);
    await anonymous.connect();
    await expect(anonymous.ping()).rejects.toThrow(/NOAUTH/);
    anonymous.disconnect();
    const withPassword = new Redis(redisAt.replace('redis://', `redis://:${password}@`), { maxRetriesPerRequest: 0 });
    expect(await withPassword.config('GET', 'bind')).toEqual(['bind', '127.0.0.1 -::1']);
    withPassword.disconnect();
    // doctor reads the credentials agentq start uses, and where its API really listens (not PORT's default).
    const doctor = spawnAgentq(['doctor'], { REDIS_URL: redisAt, AGENTQ_DATA_DIR: dataDir });
    await doctor.exited;
    expect(doctor.output()).toMatch(
      /ok +redis:\/\/127\.0\.0\.1:\d+ answers, with a password \(the private Redis's of `agentq start`/,
    );
    expect(doctor.output()).toContain(`listens on ${new URL(url).host} (pid `);
    // Without it, a Redis that wants a password is said to, with how to give it: doctor fails, and so does a worker, in one line.
    const elsewhere = await mkdtemp(path.join(tmpdir(), 'agentq-no-password-'));
    const refused = spawnAgentq(['doctor'], { REDIS_URL: redisAt, AGENTQ_DATA_DIR: elsewhere });
    expect(await refused.exited).toBe(1);
    expect(refused.output()).toMatch(
      /FAIL +redis:\/\/127\.0\.0\.1:\d+ wants a password that REDIS_URL does not give \(NOAUTH\): put it in REDIS_URL/,
    );
    const worker = spawnAgentq(['worker', '--pools', 'casual'], { REDIS_URL: redisAt, AGENTQ_DATA_DIR: dataDir });
    expect(await worker.exited).toBe(2);
    expect(worker.output()).toMatch(
      /agentq: The Redis at REDIS_URL=redis:\/\/127\.0\.0\.1:\d+ wants a password \(NOAUTH\): put it in REDIS_URL, .*; the private Redis of `agentq start` keeps its password in .*redis\/password\.\n/,
    );
    expect(worker.output()).not.toMatch(/ReplyError| {4}at /);
    await rm(elsewhere, { recursive: true, force: true });
    expect(await agentq.stop()).toBe(0);
    // Stopping agentq stops its Redis too.
    const probe = new Redis(redisAt, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    await expect(probe.connect()).rejects.toThrow();
  });

  it('agentq api refuses a public address without keys, and says how to open it', async () => {
    const agentq = spawnAgentq(['api'], {
      REDIS_URL: redisUrl(),
      AGENTQ_HOST: '0.0.0.0',
      PORT: String(await freePort()),
    });
    expect(await agentq.exited).toBe(2);
    expect(agentq.output()).toMatch(/AGENTQ_HOST=0\.0\.0\.0 would let anyone who reaches this port run code/);
    expect(agentq.output()).toMatch(/Give tenants keys in the configuration file/);
  });

  it('agentq doctor says how each pool runs its tools, and fails where the jail cannot run', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'agentq-doctor-'));
    const good = spawnAgentq(['doctor'], { REDIS_URL: redisUrl(), AGENTQ_DATA_DIR: dataDir });
    expect(await good.exited).toBe(0);
    expect(good.output()).toMatch(
      /ok +coder +bubblewrap jail as .*network none, seccomp filter \(\d+ calls refused\), limits cgroup v\d \(memory, pids[^)]*\) per run: 1024 MiB memory and 128 processes for the whole run/,
    );
    expect(good.output()).toMatch(/ok +casual +runs no process tools/);
    expect(good.output()).toMatch(/would listen on 127\.0\.0\.1:8080 \(none runs now\); no keys/);
    // The test's Redis has no maxmemory and keeps nothing on disk: warnings, not failures.
    expect(good.output()).toMatch(/warn +Redis has no maxmemory: it grows until the machine runs out of memory/);
    expect(good.output()).toMatch(
      /warn +Redis does not log its writes to disk \(appendonly no\): a restart of Redis loses every task/,
    );

    const unjailed = spawnAgentq(['doctor'], {
      REDIS_URL: redisUrl(),
      AGENTQ_DATA_DIR: dataDir,
      AGENTQ_SANDBOX: 'none',
    });
    expect(await unjailed.exited).toBe(0);
    expect(unjailed.output()).toMatch(
      /warn +coder +no jail\. AGENTQ_SANDBOX=none: bash, python and node run WITHOUT a jail/,
    );

    if (process.getuid?.() === 0) {
      // A data directory that the per-task uids cannot reach: the tools would be refused, and doctor says why.
      const hidden = path.join(dataDir, 'hidden', 'data');
      await mkdir(hidden, { recursive: true });
      await chmod(path.join(dataDir, 'hidden'), 0o700);
      const blocked = spawnAgentq(['doctor'], { REDIS_URL: redisUrl(), AGENTQ_DATA_DIR: hidden });
      expect(await blocked.exited).toBe(1);
      expect(blocked.output()).toMatch(
        /FAIL +coder +process tools refused: the work directories under .* cannot be reached by other users/,
      );
    }
  });
});
