/**
 * Where the API lets a webhook go before it stores it: a target http_fetch could reach (no loopback or
 * private address, said at once for what the URL shows; a name is checked again at each delivery, as
 * it may resolve anywhere). The worker that sends it checks the same. Whether it can be signed is the
 * task service's to say, for every way a webhook enters (signed-webhooks.ts).
 */
import { blockedDestinations } from '@agentq/tools/blocked-destinations';
import { isIP } from 'node:net';

export interface WebhookRules {
  /** Why a URL is refused, or undefined when it may be used (or does not parse: the schema says so). */
  refusal(url: string): string | undefined;
}

export function webhookRules(options: { allowPrivate: boolean }): WebhookRules {
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
  };
}
