/**
 * The Standard Webhooks signature (https://www.standardwebhooks.com): HMAC-SHA256, keyed with the
 * secret's base64 after `whsec_`, of `<id>.<timestamp>.<body>`, sent as `v1,<base64>`. Receivers check
 * it with any Standard Webhooks library (the tests use the reference one).
 */
import { webhookKeyBytes } from '@agentq/config';
import { createHmac } from 'node:crypto';

/** The signature of exactly the bytes sent (`body` as it goes on the wire). */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: Buffer): string {
  const hmac = createHmac('sha256', webhookKeyBytes(secret)).update(`${id}.${timestampSeconds}.`).update(body);
  return `v1,${hmac.digest('base64')}`;
}

/** The headers of one attempt: the same id every time, the time and signature of this attempt. */
export function webhookHeaders(secret: string, id: string, body: Buffer, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(secret, id, timestamp, body),
  };
}
