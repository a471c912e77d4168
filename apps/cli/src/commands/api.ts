import type { Config } from '@agentq/config';
import { startApi } from '@agentq/api';
import { onShutdown } from '../shutdown.js';

/** `agentq api`: the HTTP API alone. */
export async function apiCommand(config: Config): Promise<void> {
  const api = await startApi({ config });
  console.log(`[agentq api] listening on ${api.url}`);
  process.send?.({ type: 'ready', url: api.url });
  onShutdown(() => api.close());
}
