/** An agent's built-in tools, as its entry in the configuration file lists them. */
import { agentSettings, type Config } from '@agentq/config';
import { builtinTools, type Tool } from '@agentq/tools';

export function agentBuiltinTools(config: Config, agent: string): Tool[] {
  return builtinTools(
    agentSettings(config, agent)?.tools ?? [],
    config.AGENTQ_SEARCH_URL ? { searchUrl: config.AGENTQ_SEARCH_URL } : {},
  );
}
