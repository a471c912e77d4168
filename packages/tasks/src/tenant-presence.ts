/**
 * Whether a tenant is still in the configuration file. A tenant the operator removed (its keys gone)
 * starts nothing more on the install's model: its schedules pause at their next firing
 * (schedule-service.ts), its tasks fail when a worker would take them (the worker's hold-task.ts). Both
 * ask this one predicate and say the same reason.
 */
import { DEFAULT_TENANT } from '@agentq/store';

/**
 * Whether a tenant can still call the API, as the configuration file's keys say: a key names it, or the
 * file has no keys and it is `default` (everyone's).
 * @example tenantHasKeys(apiKeys(config), 'acme')
 */
export function tenantHasKeys(keys: ReadonlyArray<{ tenant: string }>, tenant: string): boolean {
  return keys.length ? keys.some((key) => key.tenant === tenant) : tenant === DEFAULT_TENANT;
}

/** Why a removed tenant's work stops, for the messages that say it (each adds what it did). */
export function tenantGone(tenant: string): string {
  return `tenant ${tenant} is no longer in the configuration file (no key of tenants.${tenant})`;
}
