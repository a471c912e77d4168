/**
 * One tenant, one webhook signing key. A key is its bytes, not its spelling: the signer and Standard
 * Webhooks libraries decode the base64 after `whsec_` leniently, so `whsec_X=` and `whsec_X` (padding
 * dropped), or a last character that differs only in the bits decoding drops, are one key. Keys are
 * compared as those bytes: a tenant's own `webhook.secret` may be neither a shared secret
 * (AGENTQ_WEBHOOK_SECRET, `*`'s: other tenants' keys are derived from them) nor any other tenant's key,
 * its own or the one derived for it. A problem names the places, never the key. And a default webhook URL
 * needs a key to sign its deliveries with.
 */
import type { AgentqFile } from './file-schema.js';
import { tenantSigningSecret, webhookKeyBytes, webhookSecret } from './webhook-settings.js';

/**
 * The secret a tenant's deliveries are signed with: its own entry's `webhook.secret` as it is; else one
 * derived for it (tenantSigningSecret) from the secret of the entry that gives its webhook settings
 * (`*`'s, when it has none of its own) or from AGENTQ_WEBHOOK_SECRET; undefined: none.
 */
export function signingSecretOf(options: {
  settings: AgentqFile;
  secretValues: Readonly<Record<string, string | undefined>>;
  installSecret: string | undefined;
  tenant: string;
}): string | undefined {
  const { tenants } = options.settings;
  const own = options.tenant === '*' ? undefined : tenants[options.tenant]?.webhook;
  const webhook = own ?? tenants['*']?.webhook;
  const named = webhook?.secret ? options.secretValues[webhook.secret.env] : options.installSecret;
  return named && !own?.secret ? tenantSigningSecret(named, options.tenant) : named;
}

/** The problems of tenants' own signing secrets that are another's key, one line each. */
export function sharedSigningKeyProblems(options: {
  settings: AgentqFile;
  secretValues: Readonly<Record<string, string | undefined>>;
  installSecret: string | undefined;
}): string[] {
  const { settings, secretValues, installSecret } = options;
  const ownSecret = (tenant: string) => settings.tenants[tenant]?.webhook?.secret;
  // `default`: everyone's tenant on an install without keys.
  const tenants = [...new Set([...Object.keys(settings.tenants), 'default'])].filter((tenant) => tenant !== '*');
  // Whose key each key's bytes are (in words): the shared secrets, and each key derived for a tenant.
  const holders = new Map<string, string>();
  const hold = (secret: string | undefined, holder: string) => {
    const bytes = secret === undefined ? undefined : webhookKeyBytes(secret).toString('hex');
    if (bytes !== undefined && !holders.has(bytes)) holders.set(bytes, holder);
  };
  hold(installSecret, 'the key AGENTQ_WEBHOOK_SECRET holds');
  const star = ownSecret('*');
  if (star) hold(secretValues[star.env], 'the key tenants.*.webhook.secret holds');
  for (const tenant of tenants.filter((name) => !ownSecret(name)))
    hold(signingSecretOf({ ...options, tenant }), `the key derived for tenant ${tenant}`);
  const problems: string[] = [];
  for (const tenant of tenants) {
    const own = ownSecret(tenant);
    const value = own ? secretValues[own.env] : undefined;
    // One that is no secret at all is refused as such (load-file.ts).
    if (value === undefined || !webhookSecret.safeParse(value).success) continue;
    const where = `tenants.${tenant}.webhook.secret`;
    const other = holders.get(webhookKeyBytes(value).toString('hex'));
    if (other)
      problems.push(
        `  ${where}: holds ${other} (the same bytes, however written), and a tenant that knows it could sign as others: give each tenant a key of its own (echo whsec_$(openssl rand -base64 32)), or leave it out (its key is then derived from AGENTQ_WEBHOOK_SECRET)`,
      );
    else hold(value, `the key ${where} holds`);
  }
  return problems;
}

/**
 * The problems of default webhook URLs (`tenants.<t>.webhook.url`) whose deliveries nothing could sign:
 * every task of the tenant would get a webhook whose deliveries all fail.
 */
export function unsignedWebhookProblems(options: {
  settings: AgentqFile;
  secretValues: Readonly<Record<string, string | undefined>>;
  installSecret: string | undefined;
}): string[] {
  return Object.entries(options.settings.tenants)
    .filter(([tenant, { webhook }]) => webhook?.url && !signingSecretOf({ ...options, tenant }))
    .map(
      ([tenant]) =>
        `  tenants.${tenant}.webhook.url: its tasks' deliveries cannot be signed: set AGENTQ_WEBHOOK_SECRET, or give the tenant its own webhook.secret`,
    );
}
