import { BUILTIN_TOOLS } from '@agentq/contract';
import { describe, expect, it } from 'vitest';
import { builtinTools, isBuiltinTool, RUN_MADE_TOOLS } from './toolsets.js';

describe('the built-in tools by name', () => {
  it('gives every name of BUILTIN_TOOLS (what the configuration file accepts) its own tool', () => {
    const searchUrl = 'http://127.0.0.1:8888';
    const made = BUILTIN_TOOLS.filter((name) => !RUN_MADE_TOOLS.has(name));
    for (const name of made) {
      expect(
        builtinTools([name], { searchUrl }).map((tool) => tool.name),
        `${name} is a built-in tool the file accepts`,
      ).toEqual([name]);
      expect(isBuiltinTool(name)).toBe(true);
    }
    expect(builtinTools(BUILTIN_TOOLS, { searchUrl }).map((tool) => tool.name)).toEqual(made);
    // The worker makes these for each run (apps/worker's delegate-tool.ts).
    expect([...RUN_MADE_TOOLS]).toEqual(['delegate']);
  });

  it('leaves web_search out without a SearxNG instance, and other names to their caller', () => {
    expect(builtinTools(['web_search', 'bash', 'github'])).toHaveLength(1);
    expect(isBuiltinTool('github')).toBe(false);
    // A name the map holds only by inheritance is no tool.
    expect(builtinTools(['constructor', 'toString'])).toEqual([]);
    expect(isBuiltinTool('constructor')).toBe(false);
  });
});
