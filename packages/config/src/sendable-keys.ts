/**
 * An API key must reach the API byte for byte in `Authorization: Bearer <key>`. HTTP clients trim the
 * whitespace around a header's value and refuse control characters; bytes outside printable ASCII are
 * sent in whatever encoding the client picks (or refused); and keys that differ only in their
 * whitespace look alike to whoever copies them. So a key a variable holds must be printable ASCII
 * without spaces (0x21 to 0x7E). A problem names the place and the variable, never the key.
 */
import type { AgentqFile } from './file-schema.js';

/**
 * The problems of `settings`' API keys that a client could not send as they are written, one line each
 * (`  tenants.a.keys.0: ...`). `secretValues`: the variables' values as read.
 * @example sendableKeyProblems(settings, { ACME_KEY: ' k' }) // ['  tenants.acme.keys.0: the variable ACME_KEY holds ...']
 */
export function sendableKeyProblems(
  settings: { tenants: Readonly<Record<string, { keys: AgentqFile['tenants'][string]['keys'] }>> },
  secretValues: Readonly<Record<string, string>>,
): string[] {
  const problems: string[] = [];
  for (const [tenant, { keys }] of Object.entries(settings.tenants))
    keys.forEach((key, index) => {
      const value = 'env' in key ? secretValues[key.env] : undefined;
      const flaw = value === undefined ? undefined : unsendable(value);
      if ('env' in key && flaw)
        problems.push(
          `  tenants.${tenant}.keys.${index}: the variable ${key.env} holds a key with ${flaw}, which an HTTP client cannot send as it is written (Authorization: Bearer): give it a key of printable ASCII without spaces, e.g. $(openssl rand -hex 32)`,
        );
    });
  return problems;
}

/** What keeps `key` from being sent as written, in words, or undefined when nothing does. */
function unsendable(key: string): string | undefined {
  if (/^\s|\s$/u.test(key)) return 'whitespace before or after it';
  if (/[ \t\n\v\f\r]/.test(key)) return 'whitespace inside it';
  // eslint-disable-next-line no-control-regex -- control characters are what is looked for
  if (/[\u0000-\u001f\u007f]/.test(key)) return 'a control character';
  if (/[^\u0021-\u007e]/u.test(key)) return 'a character outside printable ASCII';
  return undefined;
}
