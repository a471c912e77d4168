import type { Config } from '@agentq/config';
import { startApi } from '@agentq/api';
import { sayReady } from '../say-ready.js';
import { onShutdown } from '../shutdown.js';

/** `agentq api`: the HTTP API alone. */
export async function apiCommand(config: Config): Promise<void> {
  const api = await startApi({ config });
  api.logger.info({ url: api.url, listening: api.listening }, `listening on http://${api.listening}${api.url.includes(api.listening) ? '' : ` (every interface; on this machine: ${api.url})`}`);
  await sayReady(api.logger, { url: api.url, listening: api.listening });
  onShutdown(() => api.close());
}
