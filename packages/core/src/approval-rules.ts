/**
 * Which calls wait for a person (an agent's `approvals.rules`): a call a rule names is not run until it
 * is approved. A call that will not run anyway (a mistake the model is told of) needs no approval; a
 * URL that cannot be read, or whose host is not listed, does.
 */
import type { ApprovalRule } from '@agentq/contract';
import type { PlannedCall } from './tool-protocol.js';

/** The rule that asks for approval of `call`, in words; undefined when none does. */
export function approvalRuleFor(rules: readonly ApprovalRule[], call: PlannedCall): string | undefined {
  if (call.error !== undefined || call.notRun !== undefined) return undefined;
  let parsed: Record<string, unknown> | undefined;
  for (const rule of rules) {
    if (!namesTool(rule.tool, call.name)) continue;
    if (!rule.matches && !rule.unlessHosts) return `every ${call.name} call`;
    if (parsed === undefined) {
      parsed = argumentsOf(call);
      // Not JSON: the call fails without running, its model told to send it again.
      if (parsed === undefined) return undefined;
    }
    if (rule.matches) {
      const value = parsed[rule.argument!];
      const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
      if (new RegExp(rule.matches, 'u').test(text))
        return `${call.name} with ${rule.argument} matching /${rule.matches}/`;
      continue;
    }
    const argument = rule.argument ?? 'url';
    const host = hostOf(parsed[argument]);
    if (host === undefined) return `${call.name} with a ${argument} that is not a URL`;
    if (!rule.unlessHosts!.some((allowed) => hostMatches(allowed, host)))
      return `${call.name} to ${host}, not one of ${rule.unlessHosts!.join(', ')}`;
  }
  return undefined;
}

function namesTool(pattern: string, name: string): boolean {
  return pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : pattern === name;
}

function argumentsOf(call: PlannedCall): Record<string, unknown> | undefined {
  if (call.arguments.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(call.arguments);
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
