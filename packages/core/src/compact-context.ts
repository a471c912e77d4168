/**
 * Context compaction (Mini-Agent's scheme, kept append-only): when the context passes its limit, the
 * execution between two messages the user wrote is summarised by the model; the user's messages (the
 * goal first) and the latest steps stay verbatim. A summary is marked as a summary, never passed off
 * as something the user said, and a range always ends before an assistant message, so no tool result
 * is left without its call.
 */
import type { LanguageModel } from '@agentq/llm';
import {
  buildContextView,
  isUserSaid,
  splitReasoning,
  SUMMARY_MARKER,
  type CompactionEntry,
  type ContextItem,
  type MemoryEntry,
  type Message,
  type TokenUsage,
} from '@agentq/protocol';
import { capOutput } from '@agentq/tools';
import type { AgentJournal } from './journal.js';
import { countMessageTokens, tokenUpperBound } from './count-tokens.js';

export interface CompactionSettings {
  /** Past this many tokens (counted, or as the provider reported), older steps are summarised. */
  limit: number;
  /** Latest steps kept verbatim. Default 2. */
  keepSteps?: number;
  /** The summariser's system prompt. */
  prompt: string;
}

export interface CompactOptions {
  settings: CompactionSettings;
  model: LanguageModel;
  entries: readonly MemoryEntry[];
  /** The provider's count of the context at its last call, and the messages added since. */
  reported?: { tokens: number; since: readonly Message[] };
  journal: AgentJournal;
  step: number;
  signal: AbortSignal;
}

/** Returns the compactions it committed (empty when none was needed or possible). */
export async function compactContext(options: CompactOptions): Promise<CompactionEntry[]> {
  const { settings, entries } = options;
  const view = buildContextView(entries);
  const messages = view.map((item) => item.message);
  const { reported } = options;
  // Under the limit by a bound that needs no tokenizer: nothing to count.
  if (
    tokenUpperBound(messages) <= settings.limit &&
    (!reported || reported.tokens + tokenUpperBound(reported.since) <= settings.limit)
  )
    return [];
  const tokensBefore = Math.max(
    await countMessageTokens(messages),
    reported ? reported.tokens + (await countMessageTokens(reported.since)) : 0,
  );
  if (tokensBefore <= settings.limit) return [];

  const segments = segmentsToSummarise(view, settings.keepSteps ?? 2);
  if (segments.length === 0) return [];
  const compactions: CompactionEntry[] = [];
  const usage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
  for (const segment of segments) {
    const response = await options.model.generate({
      messages: [
        { role: 'system', content: settings.prompt },
        { role: 'user', content: transcript(segment) },
      ],
      signal: options.signal,
    });
    usage.promptTokens += response.usage?.promptTokens ?? 0;
    usage.completionTokens += response.usage?.completionTokens ?? 0;
    const summary = splitReasoning(response.message.content ?? '').answer || '(the summariser returned nothing)';
    compactions.push({ role: 'compaction', summary, from: segment[0]!.from, to: segment.at(-1)!.to });
  }
  const tokensAfter = await countMessageTokens(
    buildContextView([...entries, ...compactions]).map((item) => item.message),
  );
  await options.journal.commit({
    messages: compactions,
    usage,
    events: [
      {
        type: 'compaction',
        step: options.step,
        data: {
          tokensBefore,
          tokensAfter,
          summarised: segments.reduce((total, segment) => total + segment.length, 0),
          summaries: compactions.length,
        },
      },
    ],
  });
  return compactions;
}

/**
 * The runs of execution between the user's messages, before the latest `keepSteps` steps. A run that
 * is only one earlier summary is left as it is.
 */
function segmentsToSummarise(view: readonly ContextItem[], keepSteps: number): ContextItem[][] {
  const assistantIndexes = view.flatMap((item, index) =>
    item.message.role === 'assistant' && !isSummary(item) ? [index] : [],
  );
  const tailStart = assistantIndexes.length > keepSteps ? assistantIndexes[assistantIndexes.length - keepSteps]! : -1;
  if (tailStart <= 0) return [];
  const segments: ContextItem[][] = [];
  let current: ContextItem[] = [];
  for (const item of view.slice(0, tailStart)) {
    if (item.message.role === 'system' || isUserSaid(item.message)) {
      if (current.length) segments.push(current);
      current = [];
    } else {
      current.push(item);
    }
  }
  if (current.length) segments.push(current);
  return segments.filter((segment) => !(segment.length === 1 && isSummary(segment[0]!)));
}

function isSummary(item: ContextItem): boolean {
  return item.message.role === 'assistant' && (item.message.content ?? '').startsWith(SUMMARY_MARKER);
}

/** The segment as plain text for the summariser, each part capped so the request stays small. */
function transcript(segment: readonly ContextItem[]): string {
  const parts = segment.map(({ message }) => {
    switch (message.role) {
      case 'assistant': {
        const calls = (message.toolCalls ?? []).map(
          (call) => `[calls ${call.name}] ${capOutput(call.arguments, 1_000)}`,
        );
        return [message.content ? `[assistant] ${capOutput(message.content, 2_000)}` : '', ...calls]
          .filter(Boolean)
          .join('\n');
      }
      case 'tool':
        return `[${message.name} result] ${capOutput(message.content, 2_000)}`;
      default:
        return `[${message.role === 'user' ? 'tool feedback' : message.role}] ${capOutput(message.content, 2_000)}`;
    }
  });
  return `Summarise this part of an agent's work:\n\n${parts.join('\n\n')}`;
}
