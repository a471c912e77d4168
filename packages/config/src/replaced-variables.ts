/**
 * Environment variables the configuration file replaced. One way to say each thing: a process that
 * finds one stops, and says where its setting lives now.
 */
const PER_AGENT: Record<string, (agent: string) => string> = {
  AGENTQ_MODEL: (agent) => (agent === 'planner' ? 'planner.model' : `agents.${agent}.model`),
  AGENTQ_CONCURRENCY: (agent) => (agent === 'planner' ? 'planner.concurrency' : `agents.${agent}.concurrency`),
  AGENTQ_TOOL_PROTOCOL: (agent) => `agents.${agent}.protocol`,
  AGENTQ_TOOL_NETWORK: (agent) => `agents.${agent}.jail.network`,
};

const WHOLE: Record<string, string> = {
  AGENTQ_PRICES: 'models.<model>.price',
  AGENTQ_LIMITS: 'models.<model>.limits',
  AGENTQ_MODELS: 'models (a submit may name any model listed there)',
  AGENTQ_API_KEYS: 'tenants.<tenant>.keys ([{env: VARIABLE}] or [{sha256: ...}])',
  AGENTQ_ADMIN_KEYS: 'tenants.<tenant>.keys with admin: true',
  AGENTQ_TENANT_LIMITS: 'tenants.<tenant or *>.limits.tokensPerDay and usdPerDay',
  AGENTQ_TENANT_WEIGHTS: 'tenants.<tenant or *>.weight',
  AGENTQ_TENANT_MAX_UNFINISHED: 'tenants.<tenant or *>.limits.unfinished',
  AGENTQ_TENANT_MAX_TASKS: 'tenants.<tenant or *>.limits.stored',
  AGENTQ_TENANT_MAX_MB: 'tenants.<tenant or *>.limits.mb',
  AGENTQ_SSE_STREAMS_PER_TENANT: 'tenants.<tenant or *>.limits.sseStreams',
};

/**
 * The name of any replaced variable in a text, for the test that keeps sources and docs from naming
 * them as settings (tests/unit/replaced-variables.test.ts): `AGENTQ_PRICES`, `AGENTQ_MODEL_CODER`, and a
 * per-agent one written as a pattern, `AGENTQ_MODEL_<POOL>`.
 */
export const REPLACED_VARIABLE_NAME = new RegExp(
  `\\b(?:${Object.keys(WHOLE).join('|')})\\b|\\b(?:${Object.keys(PER_AGENT).join('|')})_[A-Z0-9_<]+`,
  'g',
);

/** The replaced variables set in `env`, each with its new place; empty when there are none. */
export function replacedVariables(env: NodeJS.ProcessEnv): string[] {
  const found: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value === '') continue;
    if (name in WHOLE) {
      found.push(`  ${name}: now ${WHOLE[name]} in the configuration file`);
      continue;
    }
    const match = /^(AGENTQ_MODEL|AGENTQ_CONCURRENCY|AGENTQ_TOOL_PROTOCOL|AGENTQ_TOOL_NETWORK)_([A-Z0-9_]+)$/.exec(
      name,
    );
    if (match) found.push(`  ${name}: now ${PER_AGENT[match[1]!]!(match[2]!.toLowerCase())} in the configuration file`);
  }
  return found.sort();
}
