import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  agentNames,
  approvalsFor,
  apiKeys,
  fairOptions,
  tenantMaxBytes,
  tenantRoom,
  tenantSpendingLimits,
  tenantSseStreams,
  tenantSigningSecret,
  tenantWebhook,
  ConfigError,
  effectiveConfig,
  fallbackModelsFor,
  loadConfig,
  modelFor,
  poolNames,
  toolNetworkFor,
} from './index.js';

function write(name: string, text: string): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'agentq-config-test-')), name);
  writeFileSync(file, text);
  return file;
}
const load = (text: string, name = 'agentq.config.yaml', env: Record<string, string> = {}) =>
  loadConfig({ env: { ...env, AGENTQ_CONFIG: write(name, text) } });

describe('the configuration file', () => {
  it('declares agents, each one a pool, with their own model, fallbacks, network and instructions', () => {
    const file = write('notes.md', 'You keep notes.');
    const config = load(
      `agents:\n  notes:\n    description: keeps notes\n    instructions: { file: ${file} }\n    model: small\n    fallbackModels: [tiny]\n    tools: [memory_get]\n    jail: { network: egress }\n`,
    );
    expect(agentNames(config)).toEqual(['notes']);
    expect(poolNames(config)).toEqual(['planner', 'notes']);
    expect(modelFor(config, 'notes')).toBe('small');
    expect(fallbackModelsFor(config, 'notes')).toEqual(['tiny']);
    expect(toolNetworkFor(config, 'notes')).toBe('egress');
    expect(config.file.instructions.notes).toBe('You keep notes.');
  });

  it('keeps the shipped agents when a file leaves `agents` out', () => {
    const config = load('{"models": {"m": {"price": {"input": 1, "output": 2}}}}', 'agentq.config.json');
    expect(agentNames(config)).toEqual(['coder', 'file', 'casual', 'web']);
    expect(config.file.instructions.coder).toMatch(/^You are a coding agent/);
  });

  it('says where each problem is and what to fix', () => {
    const bad = () =>
      load(
        'agents:\n  Bad Name:\n    description: x\n    instructions: y\n  ok:\n    description: x\n    instructions: y\n    tools: [bash, nosuch]\n    colour: red\nmcpServers:\n  bash: { command: node }\n',
      );
    expect(bad).toThrow(ConfigError);
    const message = (() => {
      try {
        bad();
      } catch (error) {
        return (error as Error).message;
      }
      return '';
    })();
    expect(message).toMatch(/agents\.Bad Name: "Bad Name" is not an agent name/);
    expect(message).toMatch(/agents\.ok: unknown key "colour"/);
    expect(message).toMatch(/agents\.ok\.tools\.1: "nosuch" is neither a built-in tool/);
    expect(message).toMatch(/mcpServers\.bash: "bash" is the name of a built-in tool/);
    expect(() => load('agents:\n  a:\n    description: x\n    instructions: { file: missing.md }\n')).toThrow(
      /agents\.a\.instructions\.file: cannot read .*missing\.md \(ENOENT\)/,
    );
    expect(() => load('agents: [1, 2')).toThrow(/is not valid YAML/);
    expect(() => load('mcpServers:\n  gh: { command: node, env: { TOKEN: { env: NO_SUCH_TOKEN } } }\n')).toThrow(
      /mcpServers\.gh\.env\.TOKEN: names the variable NO_SUCH_TOKEN, which is not set/,
    );
    expect(() => load('agents: {}\n')).toThrow(/agents: declares no agent/);
    // Only a task's own server is given a task's folder.
    expect(() => load('mcpServers:\n  fs: { command: node, args: [server.js, "${AGENTQ_TASK_DIR}"] }\n')).toThrow(
      /mcpServers\.fs\.args: names \$\{AGENTQ_TASK_DIR\}, which only a server with `scope: task` has/,
    );
    const approvals = (rules: string) =>
      load(
        `agents:\n  a:\n    description: x\n    instructions: y\n    tools: [bash, http_fetch]\n    approvals: { rules: ${rules} }\n`,
      );
    expect(() => approvals('[{ tool: bsh }]')).toThrow(
      /approvals\.rules\.0\.tool: "bsh" names none of this agent's tools/,
    );
    expect(() => approvals('[{ tool: bash, matches: "^rm" }]')).toThrow(/`matches` needs the `argument` it reads/);
    expect(() => approvals('[{ tool: bash, argument: command, matches: "(" }]')).toThrow(/a regular expression/);
    expect(() => approvals('[{ tool: http_fetch, unlessHosts: ["a b"] }]')).toThrow(/unlessHosts\.0: a host name/);
    expect(
      approvalsFor(approvals('[{ tool: bash }, { tool: http_fetch, unlessHosts: ["*.example.com"] }]'), 'a'),
    ).toEqual({
      rules: [{ tool: 'bash' }, { tool: 'http_fetch', unlessHosts: ['*.example.com'] }],
    });
    expect(() => loadConfig({ env: { AGENTQ_CONFIG: '/no/such/agentq.yaml' } })).toThrow(
      /AGENTQ_CONFIG=.*no such file/,
    );
  });

  it('refuses every variable it replaced, naming the new place', () => {
    expect(() =>
      loadConfig({
        env: { AGENTQ_MODEL_PLANNER: 'big', AGENTQ_CONCURRENCY_CODER: '2', AGENTQ_TOOL_NETWORK_WEB: 'egress' },
      }),
    ).toThrow(
      /AGENTQ_CONCURRENCY_CODER: now agents\.coder\.concurrency[^]*AGENTQ_MODEL_PLANNER: now planner\.model[^]*AGENTQ_TOOL_NETWORK_WEB: now agents\.web\.jail\.network/,
    );
    // Not one of them: the global defaults stay variables.
    expect(loadConfig({ env: { AGENTQ_CONCURRENCY: '2', AGENTQ_TOOL_NETWORK: 'egress' } }).AGENTQ_CONCURRENCY).toBe(2);
  });

  it('prints the effective configuration with every secret redacted', () => {
    const config = load(
      'mcpServers:\n  gh:\n    command: node\n    env: { TOKEN: "ghp_literal", OTHER: { env: GH_TOKEN } }\n  remote:\n    url: https://mcp.example.com/mcp\n    headers: { Authorization: "Bearer secret-header" }\ntenants:\n  acme: { keys: [{ env: ACME_KEY }] }\n',
      'agentq.config.yaml',
      {
        OPENAI_API_KEY: 'sk-secret',
        REDIS_URL: 'redis://:hunter2@10.0.0.1:6379',
        ACME_KEY: 'k1-acme-key',
        GH_TOKEN: 'ghp_from_env',
      },
    );
    const text = effectiveConfig(config);
    for (const secret of ['sk-secret', 'hunter2', 'ghp_literal', 'ghp_from_env', 'secret-header', 'k1-acme-key'])
      expect(text).not.toContain(secret);
    expect(text).toContain('GH_TOKEN');
    expect(text).toContain('acme');
    expect(text).toContain('coder');
  });
});

describe('tenants', () => {
  it('takes keys by reference, with each tenant its own limits over `*`, and refuses what is not theirs', () => {
    const config = load(
      [
        'tenants:',
        '  acme: { keys: [{ env: ACME_KEY }], weight: 3, limits: { unfinished: 5, mb: 1, usdPerDay: 5 } }',
        `  ops: { keys: [{ sha256: ${'ab'.repeat(32)} }], admin: true }`,
        "  '*': { limits: { unfinished: 2, stored: 10, tokensPerDay: 1000, sseStreams: 4 } }",
        '',
      ].join('\n'),
      'agentq.config.yaml',
      { ACME_KEY: 'the-acme-key' },
    );
    expect(apiKeys(config)).toEqual([
      { sha256: createHash('sha256').update('the-acme-key').digest('hex'), tenant: 'acme', admin: false },
      { sha256: 'ab'.repeat(32), tenant: 'ops', admin: true },
    ]);
    expect(tenantRoom(config, 'acme')).toEqual({ unfinished: 5, stored: 10, bytes: 1024 * 1024 });
    expect(tenantRoom(config, 'other')).toEqual({ unfinished: 2, stored: 10 });
    expect(tenantSseStreams(config, 'acme')).toBe(4);
    expect(fairOptions(config).weights).toEqual({ acme: 3 });
    // Each entry whole, as the commit script takes it: acme's own dollars and `*`'s tokens.
    expect(tenantSpendingLimits(config)).toEqual({
      acme: { tokens: 1000, microUsd: 5_000_000 },
      ops: { tokens: 1000 },
      '*': { tokens: 1000 },
    });
    expect(tenantMaxBytes(config)).toEqual({ acme: 1024 * 1024 });
    expect(() => load("tenants:\n  '*': { keys: [{ env: X }] }\n", 'agentq.config.yaml', { X: 'k' })).toThrow(
      /tenants\.\*: gives the settings of the tenants not named/,
    );
    expect(() => load('tenants:\n  acme: { keys: [{ env: NOT_SET_KEY }] }\n')).toThrow(
      /tenants\.acme\.keys\.0: names the variable NOT_SET_KEY, which is not set/,
    );
    expect(() => load('tenants:\n  acme: { keys: ["plain-key"] }\n')).toThrow(/tenants\.acme\.keys\.0/);
    // A tenant's name is a folder's (its MCP servers' HOMEs): `..` would name another's.
    for (const name of ['..', '.'])
      expect(() => load(`tenants:\n  '${name}': { keys: [{ env: X }] }\n`, 'agentq.config.yaml', { X: 'k' })).toThrow(
        /is not a tenant name: .*not "\." or "\.\."/,
      );
    expect(() => load("tenants:\n  'a.b': { keys: [{ env: X }] }\n", 'agentq.config.yaml', { X: 'k' })).not.toThrow();
    expect(() => loadConfig({ env: { AGENTQ_API_KEYS: 'k=acme' } })).toThrow(
      /AGENTQ_API_KEYS: now tenants\.<tenant>\.keys/,
    );
  });

  it('refuses one key given to two tenants, naming both places and never the key', () => {
    const key = 'the-shared-key';
    const digest = createHash('sha256').update(key).digest('hex');
    const refusal = (text: string, env: Record<string, string> = {}) => {
      try {
        load(`tenants:\n${text}`, 'agentq.config.yaml', env);
      } catch (error) {
        return (error as Error).message;
      }
      return 'loaded';
    };
    // The same variable, two variables holding one key, a key's hash beside its variable.
    const same = refusal('  acme: { keys: [{ env: K }] }\n  beta: { keys: [{ env: K }] }\n', { K: key });
    expect(same).toMatch(
      /tenants\.acme\.keys\.0 and tenants\.beta\.keys\.0: the same key \(the variable K, and the variable K\) is given to tenants acme and beta/,
    );
    const twoVariables = refusal('  acme: { keys: [{ env: A }] }\n  beta: { keys: [{ env: C }, { env: B }] }\n', {
      A: key,
      B: key,
      C: 'another',
    });
    expect(twoVariables).toMatch(/tenants\.acme\.keys\.0 and tenants\.beta\.keys\.1: the same key/);
    const hashed = refusal(`  acme: { keys: [{ env: A }] }\n  beta: { keys: [{ sha256: ${digest} }] }\n`, { A: key });
    expect(hashed).toMatch(
      /tenants\.acme\.keys\.0 and tenants\.beta\.keys\.0: the same key \(the variable A, and its SHA-256\)/,
    );
    for (const message of [same, twoVariables, hashed]) {
      expect(message).not.toContain(key);
      expect(message).not.toContain(digest);
    }
    // One tenant listing a key twice harms nobody; two tenants with keys of their own load.
    expect(refusal('  acme: { keys: [{ env: A }, { env: B }] }\n', { A: key, B: key })).toBe('loaded');
    expect(refusal('  acme: { keys: [{ env: A }] }\n  beta: { keys: [{ env: B }] }\n', { A: key, B: 'other' })).toBe(
      'loaded',
    );
  });
});

describe("tenants' webhook signing keys", () => {
  const key = (byte: string) => `whsec_${Buffer.alloc(32, byte).toString('base64')}`;
  const INSTALL = key('i');

  it("gives each tenant a key of its own: its entry's secret, else one derived from `*`'s or the install's", () => {
    const config = load(
      [
        'tenants:',
        '  acme: { webhook: { secret: { env: ACME_HOOK } } }',
        '  rival: { webhook: { url: "https://hooks.example.com/rival" } }',
        "  '*': { webhook: { secret: { env: ALL_HOOK } } }",
        '',
      ].join('\n'),
      'agentq.config.yaml',
      { ACME_HOOK: key('a'), ALL_HOOK: key('s'), AGENTQ_WEBHOOK_SECRET: INSTALL },
    );
    expect(tenantWebhook(config, 'acme').secret).toBe(key('a'));
    expect(tenantWebhook(config, 'rival').secret).toBe(tenantSigningSecret(INSTALL, 'rival'));
    expect(tenantWebhook(config, 'other').secret).toBe(tenantSigningSecret(key('s'), 'other'));
    const derived = ['rival', 'other', 'third'].map((tenant) => tenantWebhook(config, tenant).secret);
    expect(new Set([...derived, INSTALL, key('s'), key('a')]).size).toBe(6);
    // What a Standard Webhooks library takes: whsec_ and 32 bytes of key.
    expect(Buffer.from(tenantSigningSecret(INSTALL, 'rival').slice(6), 'base64')).toHaveLength(32);
    expect(tenantWebhook(loadConfig({ env: {} }), 'default').secret).toBeUndefined();
  });

  it("refuses a tenant's own secret that is another's, `*`'s or the install's", () => {
    const file = [
      'tenants:',
      '  acme: { webhook: { secret: { env: ACME_HOOK } } }',
      '  rival: { webhook: { secret: { env: RIVAL_HOOK } } }',
      '',
    ].join('\n');
    expect(() => load(file, 'agentq.config.yaml', { ACME_HOOK: key('a'), RIVAL_HOOK: key('a') })).toThrow(
      /tenants\.rival\.webhook\.secret: holds the key tenants\.acme\.webhook\.secret holds/,
    );
    expect(() =>
      load(file, 'agentq.config.yaml', { ACME_HOOK: INSTALL, RIVAL_HOOK: key('r'), AGENTQ_WEBHOOK_SECRET: INSTALL }),
    ).toThrow(/tenants\.acme\.webhook\.secret: holds the key AGENTQ_WEBHOOK_SECRET holds/);
    expect(() =>
      load(`${file}  '*': { webhook: { secret: { env: ALL_HOOK } } }\n`, 'agentq.config.yaml', {
        ACME_HOOK: key('a'),
        RIVAL_HOOK: key('s'),
        ALL_HOOK: key('s'),
      }),
    ).toThrow(/tenants\.rival\.webhook\.secret: holds the key tenants\.\*\.webhook\.secret holds/);
  });

  it('compares the key bytes, however written, and against every key derived for another tenant', () => {
    const file = [
      'tenants:',
      '  acme: { webhook: { secret: { env: ACME_HOOK } } }',
      '  rival: { webhook: { secret: { env: RIVAL_HOOK } } }',
      '  other: {}',
      '',
    ].join('\n');
    const refusal = (env: Record<string, string>) => {
      try {
        load(file, 'agentq.config.yaml', env);
      } catch (error) {
        return (error as Error).message;
      }
      return 'loaded';
    };
    // Padding dropped, and a last character that differs only in the bits no byte has ('E' is 4, 'F' 5).
    expect(key('a')).toMatch(/YWE=$/);
    for (const spelling of [key('a').replace(/=+$/, ''), key('a').replace(/YWE=$/, 'YWF=')])
      expect(refusal({ ACME_HOOK: key('a'), RIVAL_HOOK: spelling })).toMatch(
        /tenants\.rival\.webhook\.secret: holds the key tenants\.acme\.webhook\.secret holds \(the same bytes/,
      );
    expect(
      refusal({ ACME_HOOK: INSTALL.replace(/=+$/, ''), RIVAL_HOOK: key('r'), AGENTQ_WEBHOOK_SECRET: INSTALL }),
    ).toMatch(/tenants\.acme\.webhook\.secret: holds the key AGENTQ_WEBHOOK_SECRET holds/);
    const message = refusal({
      ACME_HOOK: tenantSigningSecret(INSTALL, 'other'),
      RIVAL_HOOK: key('r'),
      AGENTQ_WEBHOOK_SECRET: INSTALL,
    });
    expect(message).toMatch(/tenants\.acme\.webhook\.secret: holds the key derived for tenant other \(/);
    expect(message).not.toContain(tenantSigningSecret(INSTALL, 'other').slice(6));
    expect(refusal({ ACME_HOOK: key('a'), RIVAL_HOOK: key('r'), AGENTQ_WEBHOOK_SECRET: INSTALL })).toBe('loaded');
  });
});
