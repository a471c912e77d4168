import { describe, expect, it } from 'vitest';
import { ConfigError, llmConfigured, loadConfig, redisTarget, toolProtocolFor } from './index.js';

describe('loadConfig', () => {
  it('gives every default', () => {
    const config = loadConfig({ env: {} });
    expect(config).toMatchObject({
      PORT: 8080,
      REDIS_URL: 'redis://127.0.0.1:6379',
      AGENTQ_DATA_DIR: './.agentq',
      AGENTQ_TOOL_PROTOCOL: 'native',
    });
    // Safe by default: tools jailed without network, the API on loopback without keys.
    expect(config).toMatchObject({
      AGENTQ_SANDBOX: 'auto',
      AGENTQ_TOOL_NETWORK: 'none',
      AGENTQ_HOST: '127.0.0.1',
      AGENTQ_ALLOW_NO_AUTH: false,
    });
    expect(llmConfigured(config)).toBe(false);
  });

  it('names each bad variable with its value and what it should be', () => {
    expect(() => loadConfig({ env: { PORT: 'eighty', AGENTQ_TOOL_PROTOCOL: 'xml', AGENTQ_CONCURRENCY: '0' } })).toThrow(
      ConfigError,
    );
    try {
      loadConfig({ env: { PORT: 'eighty', AGENTQ_TOOL_PROTOCOL: 'xml' } });
    } catch (error) {
      expect((error as Error).message).toMatch(/PORT="eighty": .*expected number/);
      expect((error as Error).message).toMatch(/AGENTQ_TOOL_PROTOCOL="xml": .*"native"/);
    }
  });

  it('reads booleans', () => {
    const config = loadConfig({ env: { AGENTQ_FETCH_PRIVATE: 'true' } });
    expect(config.AGENTQ_FETCH_PRIVATE).toBe(true);
    expect(() => loadConfig({ env: { AGENTQ_FETCH_PRIVATE: 'yes' } })).toThrow(
      /AGENTQ_FETCH_PRIVATE="yes": true or false/,
    );
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ env: { OPENAI_API_KEY: '', PORT: '' } }).PORT).toBe(8080);
  });
});

describe('toolProtocolFor', () => {
  it("takes the agent's own setting over the global one", () => {
    const config = loadConfig({ env: { AGENTQ_TOOL_PROTOCOL: 'fences' } });
    const own = {
      ...config,
      file: {
        ...config.file,
        settings: {
          ...config.file.settings,
          agents: {
            ...config.file.settings.agents,
            casual: { ...config.file.settings.agents.casual!, protocol: 'native' as const },
          },
        },
      },
    };
    expect(toolProtocolFor(own, 'coder')).toBe('fences');
    expect(toolProtocolFor(own, 'casual')).toBe('native');
  });
});

describe('redisTarget', () => {
  it('is REDIS_URL, or the Sentinels and the primary they watch, and says which sentinel entry is wrong', () => {
    expect(redisTarget(loadConfig({ env: { REDIS_URL: 'redis://:pw@10.0.0.5:6380/2' } }))).toEqual({
      url: 'redis://:pw@10.0.0.5:6380/2',
    });
    expect(
      redisTarget(
        loadConfig({ env: { REDIS_SENTINELS: '10.0.0.1:26379, sentinel-2:26379', REDIS_MASTER_NAME: 'agentq' } }),
      ),
    ).toEqual({
      url: 'redis://127.0.0.1:6379',
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: 'sentinel-2', port: 26379 },
      ],
      masterName: 'agentq',
    });
    expect(() => loadConfig({ env: { REDIS_SENTINELS: '10.0.0.1' } })).toThrow(
      /REDIS_SENTINELS=.*"10\.0\.0\.1" is not host:port/,
    );
    expect(() => loadConfig({ env: { REDIS_SENTINELS: ',' } })).toThrow(/names no sentinel/);
  });
});
