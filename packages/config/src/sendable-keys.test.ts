import { describe, expect, it } from 'vitest';
import { sendableKeyProblems } from './sendable-keys.js';

const settings = { tenants: { acme: { keys: [{ env: 'ACME_KEY' }] } } };
const problemsOf = (key: string) => sendableKeyProblems(settings, { ACME_KEY: key });

describe('keys a client can send as written', () => {
  it('takes printable ASCII without spaces', () => {
    expect(problemsOf('aK9-._~+/=!#$%&*?@[]^`{|}')).toEqual([]);
  });

  it.each([
    [' s3cr3t', 'whitespace before or after it'],
    ['s3cr3t\r\n', 'whitespace before or after it'],
    ['s3 cr3t', 'whitespace inside it'],
    ['s3\tcr3t', 'whitespace inside it'],
    ['s3\u0000cr3t', 'a control character'],
    ['s3\u007fcr3t', 'a control character'],
    ['s3cré3t', 'a character outside printable ASCII'],
    ['s3\u200bcr3t', 'a character outside printable ASCII'],
  ])('refuses %j, naming the place and not the key', (key, flaw) => {
    const [problem, ...rest] = problemsOf(key);
    expect(rest).toEqual([]);
    expect(problem).toContain(`tenants.acme.keys.0: the variable ACME_KEY holds a key with ${flaw}`);
    expect(problem).not.toMatch(/s3|cr3t/);
  });
});
