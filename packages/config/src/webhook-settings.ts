/**
 * What webhook settings are written as: a Standard Webhooks secret, and the delays between attempts; and
 * a tenant's own signing key made from a secret shared by many.
 */
import { createHmac } from 'node:crypto';
import { z } from 'zod';

/** A Standard Webhooks secret: `whsec_` and the base64 of the key. */
export const webhookSecret = z
  .string()
  .regex(
    /^whsec_[A-Za-z0-9+/]+={0,2}$/,
    'a Standard Webhooks secret: whsec_ and base64 (echo whsec_$(openssl rand -base64 32))',
  )
  .refine((value) => {
    const bytes = Buffer.from(value.slice(6), 'base64').length;
    return bytes >= 24 && bytes <= 64;
  }, 'must hold 24 to 64 bytes of key after whsec_ (echo whsec_$(openssl rand -base64 32))');

/**
 * A tenant's signing secret derived from a secret many tenants share (AGENTQ_WEBHOOK_SECRET, or the `*`
 * entry's): HMAC-SHA256 keyed with the shared secret's key bytes (its base64 after `whsec_`) of
 * `agentq-webhook:<tenant>`, written as a Standard Webhooks secret. Each tenant's receiver is given its
 * own: a tenant that knows its key cannot sign another tenant's deliveries.
 *
 * @example tenantSigningSecret('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'acme') // 'whsec_...' (32 bytes)
 */
export function tenantSigningSecret(shared: string, tenant: string): string {
  const key = webhookKeyBytes(shared);
  return `whsec_${createHmac('sha256', key).update(`agentq-webhook:${tenant}`).digest('base64')}`;
}

/**
 * The key a Standard Webhooks secret holds: the bytes of its base64 after `whsec_`, decoded as the signer
 * decodes it (padding optional, the bits past the last byte ignored). Two secrets are one key when these are equal.
 */
export function webhookKeyBytes(secret: string): Buffer {
  return Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
}

/** A delay such as `500ms`, `5s`, `30m`, `2h` or `1d`, in milliseconds (undefined when it is none). */
export function durationMs(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text);
  if (!match) return undefined;
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'ms'];
  return Math.round(Number(match[1]) * unit);
}
