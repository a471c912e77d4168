/**
 * `agentq demo` (`npm run demo`): `agentq start` against a built-in scripted model, its data kept
 * apart from real runs: its own data directory (`<data dir>/demo`), key prefix, and private Redis (on
 * port 6390, unless REDIS_URL is set).
 */
import path from 'node:path';
import { loadConfig } from '@agentq/config';
import { startOpenAIDouble } from '@agentq/llm';
import { DEMO_MODEL, DEMO_RULES } from '../demo-scenario.js';
import { startCommand } from './start.js';

export async function demoCommand(): Promise<void> {
  const double = await startOpenAIDouble({ rules: DEMO_RULES });
  console.log(`[agentq demo] a scripted demo model answers at ${double.baseURL}: no real LLM is called.`);
  const base = loadConfig();
  const env = {
    // eslint-disable-next-line no-restricted-properties -- the children parse their own config from this environment
    ...process.env,
    OPENAI_BASE_URL: double.baseURL,
    AGENTQ_MODEL: DEMO_MODEL,
    OPENAI_API_KEY: '',
    AGENTQ_DATA_DIR: path.join(base.AGENTQ_DATA_DIR, 'demo'),
    AGENTQ_REDIS_PREFIX: `${base.AGENTQ_REDIS_PREFIX}-demo`,
    // eslint-disable-next-line no-restricted-properties -- only whether the user chose a Redis (loadConfig read .env into it)
    REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6390',
  };
  await startCommand({ config: loadConfig({ env }), env, onStop: () => double.close() });
}
