/**
 * `GET /v1/webhooks/secret`: the key a tenant's webhook deliveries are signed with (`whsec_...`), for its
 * receiver to verify them. Each tenant has its own (derived from the install's secret unless the file
 * gives it one), so a tenant's key reads its own only; an admin key any tenant's (`?tenant=`, as for
 * GET /v1/usage).
 */
import { Router } from 'express';
import { principalOf } from '../api-auth.js';
import { ApiError } from '../api-error.js';
import { parsedQuery } from '../request-input.js';
import { usageQuerySchema } from './usage.js';

export function webhookSecretRouter(options: { secretOf: (tenant: string) => string | undefined }): Router {
  const router = Router();
  router.get('/v1/webhooks/secret', (request, response) => {
    const principal = principalOf(response);
    const tenant = parsedQuery(usageQuerySchema, request).tenant ?? principal.tenant;
    if (tenant !== principal.tenant && !principal.admin)
      throw new ApiError(
        'forbidden',
        `This key is tenant ${principal.tenant}'s: it reads its own signing key only (leave tenant out). An admin key reads any tenant's.`,
      );
    const secret = options.secretOf(tenant);
    if (!secret)
      throw new ApiError(
        'not_found',
        'This install signs no webhooks: its operator sets AGENTQ_WEBHOOK_SECRET (or the tenant’s webhook.secret in the configuration file).',
      );
    // A key: kept by no cache on the way.
    response.set('cache-control', 'no-store').json({ tenant, secret });
  });
  return router;
}
