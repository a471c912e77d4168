/**
 * One key, one tenant: a key listed for two tenants would let whoever holds it act as either (the API
 * took the first it found). Keys are compared as the API compares them, resolved: the same variable,
 * two variables holding the same key, or a key's SHA-256 beside the variable that holds it are one key.
 * A problem names the two places and the variables, never the key or its hash.
 */
import { createHash } from 'node:crypto';
import type { AgentqFile } from './file-schema.js';

/**
 * The problems of `settings`' keys that two tenants share, one line each (`  tenants.a.keys.0 and
 * tenants.b.keys.1: ...`). `secretValues`: the variables' values as read (a variable not read is known by
 * its name alone).
 */
export function sharedKeyProblems(settings: AgentqFile, secretValues: Readonly<Record<string, string>>): string[] {
  const first = new Map<string, { tenant: string; where: string; how: string }>();
  const problems: string[] = [];
  for (const [tenant, { keys }] of Object.entries(settings.tenants)) {
    keys.forEach((key, index) => {
      const where = `tenants.${tenant}.keys.${index}`;
      const value = 'env' in key ? secretValues[key.env] : undefined;
      const identity = 'sha256' in key ? key.sha256 : value !== undefined ? sha256(value) : `variable ${key.env}`;
      const how = 'sha256' in key ? 'its SHA-256' : `the variable ${key.env}`;
      const earlier = first.get(identity);
      if (!earlier) first.set(identity, { tenant, where, how });
      else if (earlier.tenant !== tenant)
        problems.push(
          `  ${earlier.where} and ${where}: the same key (${earlier.how}, and ${how}) is given to tenants ${earlier.tenant} and ${tenant}; a key belongs to one tenant: give each its own key`,
        );
    });
  }
  return problems;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
