import { AGENT_KINDS } from '@agentq/contract';
import { describe, expect, it } from 'vitest';
import { toolsFor } from '@agentq/tools';
import { plannerPrompt } from './planner-prompt.js';
import { readPrompt, systemPromptFor } from './system-prompts.js';

describe('prompts', () => {
  it.each(AGENT_KINDS)('has a system prompt for the %s agent in both protocols', (agent) => {
    const tools = toolsFor(agent);
    expect(systemPromptFor({ agent, protocol: 'native', tools })).toBe(readPrompt(agent));
    const fences = systemPromptFor({ agent, protocol: 'fences', tools });
    expect(fences).toContain('## How to use tools');
    for (const tool of tools.filter((candidate) => candidate.fence))
      expect(fences).toContain(`\`\`\`${tool.fence!.tags[0]}`);
    expect(fences).not.toContain('{{tools}}');
  });

  it('tells the planner every agent and its tools, and has the summariser and final-answer prompts', () => {
    const prompt = plannerPrompt({});
    for (const agent of AGENT_KINDS) expect(prompt).toContain(`- "${agent}": `);
    expect(prompt).toContain('(tools: bash, python, node, read_file');
    expect(plannerPrompt({ searchUrl: 'http://searx' })).toContain('(tools: web_search, http_fetch');
    expect(readPrompt('summariser')).toMatch(/summarise/i);
    expect(readPrompt('planner-final')).toMatch(/final answer/);
  });
});
