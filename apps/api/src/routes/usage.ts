/**
 * `GET /v1/usage`: a tenant's usage against its limits (tenant-usage.ts), so that it sees how close it is
 * before a submit is refused. A tenant's key reads its own; an admin key any tenant's (`?tenant=`), and
 * `GET /v1/tenants` every tenant the keys name (and `default`) at once.
 */
import { Router } from 'express';
import { z } from 'zod';
import { TENANT_NAME } from '@agentq/config';
import { fieldsOnly } from '@agentq/tasks';
import { tenantUsage, type RoomLimits, type TaskStore } from '@agentq/store';
import { principalOf, requireAdmin } from '../api-auth.js';
import { ApiError } from '../api-error.js';
import { parsedQuery } from '../request-input.js';

// Strict: a misspelt `?tennat=` would otherwise answer the caller's own tenant as if it were asked for.
export const usageQuerySchema = fieldsOnly(
  {
    tenant: z
      .string()
      .regex(TENANT_NAME, 'is not a tenant name (1 to 64 letters, digits, _ . -)')
      .optional()
      .meta({ description: "The tenant (an admin key's only): default the key's own." }),
  },
  '',
  'parameter',
);

export function usageRouter(options: {
  store: TaskStore;
  room: (tenant: string) => RoomLimits;
  /** The tenants the keys name, and `default`. */ tenants: readonly string[];
}): Router {
  const router = Router();
  router.get('/v1/usage', async (request, response) => {
    const principal = principalOf(response);
    const tenant = parsedQuery(usageQuerySchema, request).tenant ?? principal.tenant;
    if (tenant !== principal.tenant && !principal.admin) {
      throw new ApiError(
        'forbidden',
        `This key is tenant ${principal.tenant}'s: it reads its own usage only (leave tenant out). An admin key reads any tenant's.`,
      );
    }
    response.json(await tenantUsage(options.store, tenant, options.room(tenant)));
  });
  router.get('/v1/tenants', requireAdmin, async (_request, response) => {
    response.json({
      tenants: await Promise.all(
        options.tenants.map((tenant) => tenantUsage(options.store, tenant, options.room(tenant))),
      ),
    });
  });
  return router;
}
