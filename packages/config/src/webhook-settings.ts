/** What webhook settings are written as: a Standard Webhooks secret, and the delays between attempts. */
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

/** A delay such as `500ms`, `5s`, `30m`, `2h` or `1d`, in milliseconds (undefined when it is none). */
export function durationMs(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text);
  if (!match) return undefined;
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'ms'];
  return Math.round(Number(match[1]) * unit);
}
