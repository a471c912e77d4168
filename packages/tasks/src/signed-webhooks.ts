/**
 * A task gets a webhook only where its tenant's deliveries can be signed: otherwise every delivery
 * would fail ("no signing secret") while the client believed it asked for one. Every way a webhook
 * enters a task asks here: a submit (its own or its tenant's default), a retry and a bulk retry (its
 * task's), a schedule's create and change, and each firing (through the submit).
 */
import { AgentqError } from '@agentq/contract';

/** Whether a tenant's deliveries can be signed (it has a signing key). */
export type CanSign = (tenant: string) => boolean;

/** A webhook its tenant's deliveries could not be signed for: a 400 that says what to do. */
export class UnsignedWebhookError extends AgentqError {
  readonly code = 'webhook_unsigned';
  readonly retryable = false;
  constructor(readonly tenant: string) {
    super(
      `This install cannot sign tenant ${tenant}'s webhooks: its operator sets AGENTQ_WEBHOOK_SECRET (or tenants.${tenant}.webhook.secret in the configuration file). Leave "webhook" out meanwhile.`,
    );
  }
}

/** Throws UnsignedWebhookError when `webhooks` (the tasks' that have one) cannot be signed for `tenant`. */
export function assertSigned(canSign: CanSign, tenant: string, webhooks: boolean): void {
  if (webhooks && !canSign(tenant)) throw new UnsignedWebhookError(tenant);
}
