/**
 * The Lua scripts as files: the loader binds each KEYS and ARGV to its name and pulls includes in once,
 * and no script builds a key itself (every key it touches comes in KEYS, for Redis Cluster and for
 * whoever reads the script).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { luaScript } from '@agentq/store';
import { describe, expect, it } from 'vitest';

const root = path.join(import.meta.dirname, '../..');
const folders = ['packages/store/scripts', 'packages/store/scripts/includes', 'packages/scheduling/scripts'];
const scripts = folders.flatMap((folder) =>
  readdirSync(path.join(root, folder))
    .filter((name) => name.endsWith('.lua'))
    .map((name) => ({ file: `${folder}/${name}`, text: readFileSync(path.join(root, folder, name), 'utf8') })),
);

/** Commands whose first argument is not a key. */
const KEYLESS = new Set(['TIME', 'PUBLISH']);

describe('the Lua scripts', () => {
  it('are found', () => {
    expect(scripts.length).toBeGreaterThanOrEqual(20);
  });

  it.each(scripts)('$file names every key it touches: no key is built inside it', ({ text }) => {
    const code = text.replace(/--.*$/gm, '');
    const keyArguments = [
      ...[...code.matchAll(/redis\.call\('(\w+)',\s*([^,)]+)/g)]
        .filter(([, command]) => !KEYLESS.has(command!.toUpperCase()))
        .map(([, , key]) => key!.trim()),
      ...[...code.matchAll(/callMany\('\w+',\s*([^,)]+)/g)].map(([, key]) => key!.trim()),
    ];
    for (const key of keyArguments) expect(key).toMatch(/^(\w+|KEYS\[.+\]|unpack\(KEYS)$/);
  });

  it('binds KEYS and ARGV by name, adds constants, and pulls an include in once', () => {
    const script = luaScript({
      dir: new URL('../../packages/store/scripts/', import.meta.url),
      name: 'create',
      keys: ['orderCounterKey'],
      args: ['payloadJson'],
      constants: { STATUS_SPAN: 2 ** 44 },
    });
    expect(script.source).toContain('local orderCounterKey = KEYS[1]');
    expect(script.source).toContain('local KEYS_REST = 2');
    expect(script.source).toContain('local payloadJson = ARGV[1]');
    expect(script.source).toContain('local ARGV_REST = 2');
    expect(script.source).toContain('local STATUS_SPAN = 17592186044416');
    // add-events, join-tenant-list and take-room each include call-many: it is there once.
    expect(script.source.match(/local function callMany/g)).toHaveLength(1);
    expect(script.source).not.toContain('-- @include');
  });

  it('refuses a name Lua cannot bind', () => {
    expect(() =>
      luaScript({
        dir: new URL('../../packages/store/scripts/', import.meta.url),
        name: 'set-note',
        keys: ['notes-key'],
        args: [],
      }),
    ).toThrow(/cannot name a Lua local/);
  });
});
