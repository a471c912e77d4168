/**
 * `agentq webhooks secret [--tenant T]`: the key the tenant's webhook deliveries are signed with
 * (GET /v1/webhooks/secret), printed alone, for its receiver's configuration: the key's own tenant's,
 * or (an admin key) any tenant's.
 */
import type { WebhookSecretView } from '@agentq/contract';
import type { ApiClient } from '../api-client.js';
import { UsageError } from '../usage-error.js';

export async function webhooksCommand(
  client: ApiClient,
  action: string | undefined,
  flags: { tenant?: string; json?: boolean },
): Promise<number> {
  if (action !== 'secret') throw new UsageError('usage: agentq webhooks secret [--tenant T]');
  const key = await client.call<WebhookSecretView>(
    'GET',
    `/v1/webhooks/secret${flags.tenant !== undefined ? `?tenant=${encodeURIComponent(flags.tenant)}` : ''}`,
  );
  process.stdout.write(flags.json ? `${JSON.stringify(key)}\n` : `${key.secret}\n`);
  return 0;
}
