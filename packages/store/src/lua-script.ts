/**
 * Lua scripts as files: one `.lua` file a script (a package's `scripts/` folder), shared functions in
 * the store's `scripts/includes/`, pulled in by a line `-- @include <name>`. Each script's spec names
 * its KEYS and ARGV in order: that spec is the one place that says which is which. The loader puts a
 * prelude in front of the file that binds each to a local of its name (`local taskKey = KEYS[1]`), and
 * the callers pass them by name, so neither side counts positions. Keys and arguments past the named
 * ones (a variable number: a batch's tasks) start at `KEYS_REST` and `ARGV_REST`. Numbers the scripts
 * share with TypeScript (a status band's span) come in as `constants`.
 *
 * Every key a script touches is passed in KEYS (Redis Cluster routes a script by them).
 */
import { readFileSync } from 'node:fs';
import type { ChainableCommander, Redis } from 'ioredis';

/** The store's shared Lua functions. */
const INCLUDES = new URL('../scripts/includes/', import.meta.url);

export type LuaArg = string | number | Buffer;

export interface LuaCall<Key extends string, Arg extends string, LateKey extends string = never> {
  keys: Record<Key, string>;
  /**
   * The spec's `lateKeys`, for a call that touches them; left out, they are not sent (nil in the script),
   * and neither may `restKeys` be (they would take the late keys' places).
   */
  lateKeys?: Record<LateKey, string>;
  args: Record<Arg, LuaArg>;
  /** Keys after the named ones: `KEYS[KEYS_REST]` on. */
  restKeys?: readonly string[];
  /** Arguments after the named ones: `ARGV[ARGV_REST]` on. */
  restArgs?: readonly LuaArg[];
}

export interface LuaScript<Key extends string, Arg extends string, LateKey extends string = never> {
  readonly name: string;
  /** The whole source Redis runs: the prelude, then the file with its includes. */
  readonly source: string;
  /**
   * Makes it, with every other script loaded, a command of `redis` (and of the pipelines made from it
   * after). `run` does it too.
   */
  define(redis: Redis): void;
  /** Runs it on `redis`, or queues it in a pipeline of a connection it was defined on. */
  run(redis: Redis | ChainableCommander, call: LuaCall<Key, Arg, LateKey>): Promise<unknown>;
  /** The same, with bulk replies as Buffers (binary data, or text not decoded). */
  runBuffer(redis: Redis | ChainableCommander, call: LuaCall<Key, Arg, LateKey>): Promise<unknown>;
}

type Command = (numberOfKeys: number, ...args: LuaArg[]) => Promise<unknown>;

interface ClusterAutoPipelining {
  enableAutoPipelining?: boolean;
  autoPipeliningIgnoredCommands?: string[];
}

/** Every script this process loaded (a module's scripts load when it is imported). */
const everyScript = new Set<{ define(redis: Redis): void }>();

/**
 * Makes every script loaded so far a command of `redis`. A connection with auto-pipelining must have
 * them before its first command: its pipelines copy the commands it has when they are made, and a
 * command added after a pipeline was made is missing from it (ioredis then loses that pipeline's
 * replies: "results[i] is not iterable").
 */
export function defineScripts(redis: Redis): void {
  for (const script of everyScript) script.define(redis);
}

export function luaScript<
  const Keys extends readonly string[],
  const Args extends readonly string[],
  const LateKeys extends readonly string[] = [],
>(spec: {
  /** The package's scripts folder (`new URL('../scripts/', import.meta.url)`). */
  dir: URL;
  /** The file's name without `.lua`; the script's name too. */
  name: string;
  keys: Keys;
  /**
   * Keys after `keys` that only some calls touch: a call gives all of them or none. Redis makes a Lua
   * string of every key a call sends (about 1K instructions each, with its collection).
   */
  lateKeys?: LateKeys;
  args: Args;
  constants?: Record<string, number>;
}): LuaScript<Keys[number], Args[number], LateKeys[number]> {
  const body = withIncludes(readFileSync(new URL(`${spec.name}.lua`, spec.dir), 'utf8'), new Set());
  const named = [...spec.keys, ...(spec.lateKeys ?? [])];
  const source = [
    `-- ${spec.name}.lua, with its KEYS and ARGV by name (lua-script.ts)`,
    ...named.map((key, index) => `local ${identifier(key)} = KEYS[${index + 1}]`),
    `local KEYS_REST = ${named.length + 1}`,
    ...spec.args.map((arg, index) => `local ${identifier(arg)} = ARGV[${index + 1}]`),
    `local ARGV_REST = ${spec.args.length + 1}`,
    ...Object.entries(spec.constants ?? {}).map(([name, value]) => `local ${identifier(name)} = ${luaNumber(value)}`),
    body,
  ].join('\n');
  const command = `agentq_${spec.name.replaceAll('-', '_')}`;
  const define = (redis: Redis) => {
    if (command in redis) return;
    redis.defineCommand(command, { lua: source });
    // A Redis Cluster's auto-pipelining routes a script by its first argument, the number of its keys
    // (ioredis 5), so every script of the tick went to one node: with cells on several masters, Redis
    // refused them ("All keys in the pipeline should belong to the same slots allocation group"). Sent
    // as they are made, each goes to its keys' node.
    const options = (redis as unknown as { isCluster?: boolean; options?: ClusterAutoPipelining }).options;
    if ((redis as unknown as { isCluster?: boolean }).isCluster && options?.enableAutoPipelining)
      options.autoPipeliningIgnoredCommands = [...(options.autoPipeliningIgnoredCommands ?? []), command];
  };
  const send = (
    redis: Redis | ChainableCommander,
    call: LuaCall<Keys[number], Args[number], LateKeys[number]>,
    buffers: boolean,
  ) => {
    if (!(command in redis)) {
      if (!('defineCommand' in redis))
        throw new Error(`${spec.name}.lua: define it on the connection before its pipeline`);
      defineScripts(redis);
    }
    const late = call.lateKeys;
    if (!late && spec.lateKeys?.length && call.restKeys?.length)
      throw new Error(`${spec.name}.lua: keys after the named ones need the late keys too`);
    const keys = [
      ...spec.keys.map((key: Keys[number]) => call.keys[key]),
      ...(late ? (spec.lateKeys ?? []).map((key: LateKeys[number]) => late[key]) : []),
      ...(call.restKeys ?? []),
    ];
    const args = [...spec.args.map((arg: Args[number]) => call.args[arg]), ...(call.restArgs ?? [])];
    const run = (redis as unknown as Record<string, Command>)[buffers ? `${command}Buffer` : command]!;
    return run.call(redis, keys.length, ...keys, ...args);
  };
  everyScript.add({ define });
  return {
    name: spec.name,
    source,
    // Every script with it: a connection never has some of them (see defineScripts).
    define: defineScripts,
    run: (redis, call) => send(redis, call, false),
    runBuffer: (redis, call) => send(redis, call, true),
  };
}

/** Replaces each `-- @include <name>` line by that include's text (once each). */
function withIncludes(text: string, seen: Set<string>): string {
  return text.replace(/^-- @include ([\w-]+)\s*$/gm, (_line, name: string) => {
    if (seen.has(name)) return '';
    seen.add(name);
    return withIncludes(readFileSync(new URL(`${name}.lua`, INCLUDES), 'utf8'), seen);
  });
}

function identifier(name: string): string {
  if (!/^[A-Za-z_]\w*$/.test(name)) throw new Error(`"${name}" cannot name a Lua local`);
  return name;
}

/** Whole numbers as digits (Lua reads 2^44 exactly); others as JavaScript writes them. */
function luaNumber(value: number): string {
  return Number.isInteger(value) ? value.toFixed(0) : String(value);
}
