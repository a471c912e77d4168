/** The planner's system prompt: `prompts/planner.md` with the agents of the configuration file and their tools. */
import { agentNames, agentSettings, type Config } from '@agentq/config';
import { agentBuiltinTools } from './agent-tools.js';
import { readPrompt } from './system-prompts.js';

export function plannerPrompt(config: Config): string {
  const agents = agentNames(config).map((agent) => {
    const settings = agentSettings(config, agent)!;
    // Its MCP servers by name: what the planner needs is what the agent can reach, not each tool.
    const servers = settings.tools.filter((tool) => tool in config.file.settings.mcpServers);
    const tools = [
      ...agentBuiltinTools(config, agent).map((tool) => tool.name),
      ...servers.map((name) => `${name} (MCP)`),
    ];
    return `- "${agent}": ${settings.description} (tools: ${tools.join(', ') || 'none'})`;
  });
  return readPrompt('planner').replace('{{agents}}', agents.join('\n'));
}
