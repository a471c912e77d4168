/** The planner's system prompt: `prompts/planner.md` with the agents it may use and their tools. */
import { AGENT_KINDS } from '@agentq/contract';
import { toolsFor } from '@agentq/tools';
import { readPrompt } from './system-prompts.js';

const ROLES: Record<string, string> = {
  coder: 'writes and runs code (bash, python, node), reads and writes files',
  file: 'finds, reads, creates and edits files; runs shell commands',
  casual: 'answers from its own knowledge: writing, explaining, summarising; runs nothing',
  web: 'fetches web pages (and searches the web when a search engine is configured)',
};

export function plannerPrompt(options: { searchUrl?: string }): string {
  const agents = AGENT_KINDS.map((agent) => {
    const tools = toolsFor(agent, options.searchUrl ? { searchUrl: options.searchUrl } : {}).map((tool) => tool.name);
    return `- "${agent}": ${ROLES[agent] ?? ''} (tools: ${tools.join(', ') || 'none'})`;
  });
  return readPrompt('planner').replace('{{agents}}', agents.join('\n'));
}
