/**
 * Which calls wait for a person (an agent's `approvals.rules`): a call a rule names is not run until it
 * is approved. A rule reads what a call will do, not how the model spelt it:
 *
 * - a URL as fetch reads it (user info and all); a redirect as a call of its own to where it goes;
 * - a path of the file tools as they will open it (workdirPathOf: `./`, `//`, `..` and links inside
 *   read), tried in both Unicode forms (NFC, NFD) and in any case, since a filesystem may take either
 *   for the same name; a folder also with its final `/`;
 * - any other argument (an MCP tool's path, which its server resolves as it likes) as written and as
 *   each path it may name in the work directory: read as the file tools would, read lexically (a
 *   server may go up and back in), and with its leading `/` dropped (a server may join it to its
 *   folder); each in both Unicode forms and any case: another spelling of a path is held too;
 * - a fence block that saves a file before it runs is also a `write_file` of that path.
 *
 * A call that will not run anyway (a mistake the model is told of, a path outside the work directory
 * the file tools refuse) needs no approval; a URL that cannot be read does.
 */
import path from 'node:path';
import type { ApprovalRule } from '@agentq/contract';
import { workdirPathOf, type Tool } from '@agentq/tools';
import type { PlannedCall } from './tool-protocol.js';

/** What a call is checked against: the agent's rules, and where its paths are resolved. */
export interface ApprovalCheck {
  rules: readonly ApprovalRule[];
  /** The task's work directory. */
  workdir: string;
  /** The agent's tools: which of their arguments are paths (`Tool.pathArguments`). */
  tools: readonly Tool[];
}

/** The rule that asks for approval of `call`, in words; undefined when none does. */
export function approvalRuleFor(options: ApprovalCheck & { call: PlannedCall }): string | undefined {
  const { call } = options;
  if (call.error !== undefined || call.notRun !== undefined) return undefined;
  const own = ruleFor(options, call.name, call.arguments);
  if (own !== undefined || call.savePath === undefined) return own;
  const save = ruleFor(options, 'write_file', JSON.stringify({ path: call.savePath, content: call.saveContent ?? '' }));
  return save && `${call.name} saving its block as ${call.savePath}, a ${save}`;
}

/** The rule that holds a redirect of `call` to `url`: a call of the same tool to that URL. */
export function approvalRuleForRedirect(
  options: ApprovalCheck & { call: PlannedCall; url: string },
): string | undefined {
  const { call, url } = options;
  return ruleFor(options, call.name, JSON.stringify({ ...argumentsOf(call.arguments), url }));
}

function ruleFor(check: ApprovalCheck, name: string, text: string): string | undefined {
  let parsed: Record<string, unknown> | undefined;
  for (const rule of check.rules) {
    if (!namesTool(rule.tool, name)) continue;
    if (!rule.matches && !rule.unlessHosts) return `every ${name} call`;
    if (parsed === undefined) {
      parsed = argumentsOf(text);
      // Not JSON: the call fails without running, its model told to send it again.
      if (parsed === undefined) return undefined;
    }
    const argument = rule.argument ?? 'url';
    const value = parsed[argument];
    if (rule.matches) {
      const isPath =
        typeof value === 'string' &&
        check.tools.some((tool) => tool.name === name && tool.pathArguments?.includes(argument));
      const written = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
      const matched = matchingSpelling(
        rule.matches,
        isPath ? openedSpellings(check.workdir, written) : spellingsOf(check.workdir, value, written),
      );
      if (matched === undefined) continue;
      const as = matched === written ? '' : ` (${matched})`;
      return `${name} with ${argument} matching /${rule.matches}/${as}`;
    }
    const host = hostOf(value);
    if (host === undefined) return `${name} with a ${argument} that is not a URL`;
    if (!rule.unlessHosts!.some((allowed) => hostMatches(allowed, host)))
      return `${name} to ${host}, not one of ${rule.unlessHosts!.join(', ')}`;
  }
  return undefined;
}

/** The longest text read as the file tools open it (a walk of the folders it names): no system opens a longer one. */
const PATH_MAX = 4096;

/**
 * A path as the file tools will open it, and a folder with its final `/`; none outside the work
 * directory (they refuse it).
 */
function openedSpellings(workdir: string, value: string): string[] {
  try {
    const opened = workdirPathOf({ workdir, path: value });
    return [opened.path, ...(opened.isFolder ? [`${opened.path}/`] : [])];
  } catch {
    return [];
  }
}

/**
 * What an argument whose tool cannot be asked how it reads a path (an MCP tool's) may name: its text,
 * and, for a string, each path in the work directory it may be taken for (a server may resolve a long
 * one to a short one before it opens it: only the walk of the file tools is bounded).
 */
function spellingsOf(workdir: string, value: unknown, text: string): string[] {
  const forms = new Set([text]);
  if (typeof value !== 'string') return [...forms];
  const root = path.posix.resolve(workdir);
  for (const candidate of [value, value.replace(/^\/+/, '')]) {
    const lexical = path.posix.resolve(root, candidate);
    if (lexical.startsWith(`${root}/`)) forms.add(lexical.slice(root.length + 1));
    if (Buffer.byteLength(candidate) <= PATH_MAX)
      for (const opened of openedSpellings(workdir, candidate)) forms.add(opened);
  }
  return [...forms];
}

/**
 * The first of `forms` the pattern matches in either Unicode form, with or without case (a filesystem
 * may take either for the same name).
 */
function matchingSpelling(pattern: string, forms: readonly string[]): string | undefined {
  const expressions = ['u', 'ui'].map((flags) => new RegExp(pattern, flags));
  return forms.find((form) =>
    [form.normalize('NFC'), form.normalize('NFD')].some((spelling) =>
      expressions.some((expression) => expression.test(spelling)),
    ),
  );
}

function namesTool(pattern: string, name: string): boolean {
  return pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : pattern === name;
}

function argumentsOf(text: string): Record<string, unknown> | undefined {
  if (text.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The host a URL goes to, as fetch reads it (user info and all), lower case, without a final dot. */
function hostOf(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    const host = new URL(value).hostname.toLowerCase().replace(/\.$/, '');
    return host || undefined;
  } catch {
    return undefined;
  }
}

function hostMatches(allowed: string, host: string): boolean {
  const pattern = allowed.toLowerCase();
  return pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) : host === pattern;
}
