/** `agentq demo` (`npm run demo`): `agentq start` against a built-in scripted model. */
import { loadConfig } from '@agentq/config';
import { startOpenAIDouble } from '@agentq/llm';
import { DEMO_MODEL, DEMO_RULES } from '../demo-scenario.js';
import { startCommand } from './start.js';

export async function demoCommand(): Promise<void> {
  const double = await startOpenAIDouble({ rules: DEMO_RULES });
  console.log(`[agentq demo] a scripted demo model answers at ${double.baseURL}: no real LLM is called.`);
  // eslint-disable-next-line no-restricted-properties -- the children parse their own config from this environment
  const env = { ...process.env, OPENAI_BASE_URL: double.baseURL, AGENTQ_MODEL: DEMO_MODEL, OPENAI_API_KEY: '' };
  await startCommand({ config: loadConfig({ env }), env, onStop: () => double.close() });
}
