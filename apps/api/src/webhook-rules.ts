/**
 * What the API holds a webhook to before it stores it: a target http_fetch could reach (no loopback or
 * private address, said at once for what the URL shows; a name is checked again at each delivery, as
 * it may resolve anywhere), and a secret to sign with. The worker that sends it checks the same.
 */
import { blockedDestinations } from '@agentq/tools/blocked-destinations';
import { isIP } from 'node:net';

export interface WebhookRules {
  /** Why a URL is refused, or undefined when it may be used (or does not parse: the schema says so). */
  refusal(url: string): string | undefined;
  /** Whether a tenant's deliveries can be signed. */
  canSign(tenant: string): boolean;
}

export function webhookRules(options: {
  allowPrivate: boolean;
  secretOf: (tenant: string) => string | undefined;
}): WebhookRules {
  const blocked = options.allowPrivate ? undefined : blockedDestinations();
  return {
    refusal(url) {
      // A URL that does not parse is the schema's to refuse (a 400 at the same field).
      if (!blocked || !URL.canParse(url)) return undefined;
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
      const local = host === 'localhost' || host.endsWith('.localhost') || (isIP(host) !== 0 && blocked(host));
      return local
        ? `${host} is loopback or a private address: webhooks go to the public internet (the operator's AGENTQ_WEBHOOK_ALLOW_PRIVATE=true allows private targets)`
        : undefined;
    },
    canSign: (tenant) => options.secretOf(tenant) !== undefined,
  };
}
