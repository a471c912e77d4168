import type { Config } from '@agentq/config';
import { startApi } from '@agentq/api';
import { writeApiAddress } from '../api-address.js';
import { onShutdown } from '../shutdown.js';

/** `agentq api`: the HTTP API alone. */
export async function apiCommand(config: Config): Promise<void> {
  const api = await startApi({ config });
  api.logger.info(
    { url: api.url, listening: api.listening },
    `listening on http://${api.listening}${api.url.includes(api.listening) ? '' : ` (every interface; on this machine: ${api.url})`}`,
  );
  process.send?.({ type: 'ready', url: api.url, listening: api.listening });
  const forget = writeApiAddress(config, { url: api.url, listening: api.listening });
  onShutdown(async () => {
    forget();
    await api.close();
  }, api.logger);
}
