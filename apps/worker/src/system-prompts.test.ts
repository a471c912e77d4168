import { describe, expect, it } from 'vitest';
import { agentInstructions, agentNames, loadConfig } from '@agentq/config';
import { agentBuiltinTools } from './agent-tools.js';
import { plannerPrompt } from './planner-prompt.js';
import { readPrompt, systemPromptFor } from './system-prompts.js';

// The shipped configuration file's agents.
const config = loadConfig({ env: {} });

describe('prompts', () => {
  it.each(agentNames(config))('has a system prompt for the %s agent in both protocols', (agent) => {
    const tools = agentBuiltinTools(config, agent);
    const instructions = agentInstructions(config, agent);
    expect(instructions).toBe(readPrompt(agent));
    expect(systemPromptFor({ instructions, protocol: 'native', tools })).toBe(instructions);
    const fences = systemPromptFor({ instructions, protocol: 'fences', tools });
    expect(fences).toContain('## How to use tools');
    for (const tool of tools.filter((candidate) => candidate.fence))
      expect(fences).toContain(`\`\`\`${tool.fence!.tags[0]}`);
    expect(fences).not.toContain('{{tools}}');
  });

  it('tells the planner every agent, its description and its tools, and has the summariser and final-answer prompts', () => {
    const prompt = plannerPrompt(config);
    for (const agent of agentNames(config))
      expect(prompt).toContain(`- "${agent}": ${config.file.settings.agents[agent]!.description} (tools: `);
    expect(prompt).toContain('(tools: bash, python, node, read_file');
    expect(prompt).not.toContain('web_search');
    expect(plannerPrompt({ ...config, AGENTQ_SEARCH_URL: 'http://searx' })).toContain('(tools: web_search, http_fetch');
    expect(readPrompt('summariser')).toMatch(/summarise/i);
    expect(readPrompt('planner-final')).toMatch(/final answer/);
  });
});
