/**
 * Which calls wait for a person (an agent's `approvals.rules`): a call a rule names is not run until it
 * is approved. A rule reads what a call will do, not how the model spelt it:
 *
 * - a URL as fetch reads it (user info and all); a redirect as a call of its own to where it goes;
 * - a path of the file tools as they will open it (workdirPathOf: `./`, `//`, `..` and links inside
 *   read), tried in both Unicode forms (NFC, NFD) and in any case, since a filesystem may take either
 *   for the same name; a folder also with its final `/`;
 * - a fence block that saves a file before it runs is also a `write_file` of that path.
 *
 * A call that will not run anyway (a mistake the model is told of, a path outside the work directory
 * the file tools refuse) needs no approval; a URL that cannot be read does.
 */
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
      if (!isPath) {
        const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
        if (new RegExp(rule.matches, 'u').test(text)) return `${name} with ${argument} matching /${rule.matches}/`;
        continue;
      }
      const resolved = resolvedPath(check.workdir, value);
      if (resolved && matchesAnySpelling(rule.matches, resolved)) {
        const as = resolved.path === value ? '' : ` (${resolved.path})`;
        return `${name} with ${argument} matching /${rule.matches}/${as}`;
      }
      continue;
    }
    const host = hostOf(value);
    if (host === undefined) return `${name} with a ${argument} that is not a URL`;
    if (!rule.unlessHosts!.some((allowed) => hostMatches(allowed, host)))
      return `${name} to ${host}, not one of ${rule.unlessHosts!.join(', ')}`;
  }
  return undefined;
}

/** A path as the file tools will open it; undefined outside the work directory (they refuse it). */
function resolvedPath(workdir: string, value: string): { path: string; isFolder: boolean } | undefined {
  try {
    return workdirPathOf({ workdir, path: value });
  } catch {
    return undefined;
  }
}

/** Whether the pattern matches the path in either Unicode form, with or without case, or as a folder. */
function matchesAnySpelling(pattern: string, resolved: { path: string; isFolder: boolean }): boolean {
  const forms = [resolved.path, ...(resolved.isFolder ? [`${resolved.path}/`] : [])].flatMap((form) => [
    form.normalize('NFC'),
    form.normalize('NFD'),
  ]);
  return ['u', 'ui'].some((flags) => {
    const expression = new RegExp(pattern, flags);
    return forms.some((form) => expression.test(form));
  });
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
