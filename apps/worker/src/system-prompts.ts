/** System prompts per agent kind, read once from the repository's `prompts/` folder. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const PROMPTS_DIR = fileURLToPath(new URL('../../../prompts/', import.meta.url));

const cache = new Map<string, string>();

export function systemPromptFor(agent: string): string {
  let prompt = cache.get(agent);
  if (prompt === undefined) {
    prompt = readFileSync(`${PROMPTS_DIR}${agent}.md`, 'utf8').trim();
    cache.set(agent, prompt);
  }
  return prompt;
}
