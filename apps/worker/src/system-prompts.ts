/** The prompts of `prompts/` agentq owns (the planner's, the summariser's, the fences lesson), and an agent's system prompt. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PROMPTS_DIR } from '@agentq/config/shipped-files';
import type { ToolProtocolName } from '@agentq/contract';
import type { Tool } from '@agentq/tools';

const cache = new Map<string, string>();

/** A prompt file of `prompts/`, by name without `.md`. */
export function readPrompt(name: string): string {
  let prompt = cache.get(name);
  if (prompt === undefined) {
    prompt = readFileSync(path.join(PROMPTS_DIR, `${name}.md`), 'utf8').trim();
    cache.set(name, prompt);
  }
  return prompt;
}

/** The agent's instructions; with fences, followed by the lesson on code blocks for its tools. */
export function systemPromptFor(options: {
  instructions: string;
  protocol: ToolProtocolName;
  tools: readonly Tool[];
}): string {
  const base = options.instructions;
  if (options.protocol === 'native') return base;
  const lines = options.tools
    .filter((tool) => tool.fence)
    .map((tool) => {
      const [tag, ...aliases] = tool.fence!.tags;
      return `- \`\`\`${tag}${aliases.length ? ` (or ${aliases.map((alias) => `\`\`\`${alias}`).join(', ')})` : ''}: ${tool.description}`;
    });
  return `${base}\n\n${readPrompt('fences').replace('{{tools}}', lines.join('\n'))}`;
}
