/**
 * A task's webhook deliveries: each attempt's outcome, and a resend with the same `webhook-id` (a 409 while
 * an attempt of it is under way: a second would go out beside it).
 */
import { Router } from 'express';
import type { TaskStore, WebhookDeliveries } from '@agentq/store';
import { principalOf } from '../api-auth.js';
import { ApiError } from '../api-error.js';
import { taskIdOf, visibleRecord } from './tasks.js';

export function deliveriesRouter(options: { store: TaskStore; deliveries: WebhookDeliveries }): Router {
  const router = Router();

  router.get('/v1/tasks/:id/deliveries', async (request, response) => {
    const record = await visibleRecord(options.store, principalOf(response), taskIdOf(request));
    const deliveries = record.webhookUrl ? await options.deliveries.list(record.id, record.webhookUrl) : [];
    response.json({ deliveries });
  });

  router.post('/v1/tasks/:id/deliveries/:deliveryId/resend', async (request, response) => {
    const record = await visibleRecord(options.store, principalOf(response), taskIdOf(request));
    const deliveryId = String(request.params.deliveryId);
    const resent = record.webhookUrl
      ? await options.deliveries.resend(record.id, record.tenant, deliveryId, record.webhookUrl)
      : ({ outcome: 'missing' } as const);
    if (resent.outcome === 'missing')
      throw new ApiError(
        'not_found',
        `Task "${record.id}" has no delivery "${deliveryId.slice(0, 100)}": GET /v1/tasks/${record.id}/deliveries lists them.`,
      );
    if (resent.outcome === 'under_way')
      throw new ApiError(
        'conflict',
        `An attempt of delivery "${deliveryId}" is under way: resend it once it has ended (GET /v1/tasks/${record.id}/deliveries lists its attempts).`,
      );
    response.status(202).json(resent.delivery);
  });

  return router;
}
