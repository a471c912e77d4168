import { BUILTIN_TOOLS } from '@agentq/contract';
import { describe, expect, it } from 'vitest';
import { builtinTools, isBuiltinTool } from './toolsets.js';

describe('the built-in tools by name', () => {
  it('gives every name of BUILTIN_TOOLS (what the configuration file accepts) its own tool', () => {
    const searchUrl = 'http://127.0.0.1:8888';
    for (const name of BUILTIN_TOOLS) {
      expect(
        builtinTools([name], { searchUrl }).map((tool) => tool.name),
        `${name} is a built-in tool the file accepts`,
      ).toEqual([name]);
      expect(isBuiltinTool(name)).toBe(true);
    }
    expect(builtinTools(BUILTIN_TOOLS, { searchUrl }).map((tool) => tool.name)).toEqual([...BUILTIN_TOOLS]);
  });

  it('leaves web_search out without a SearxNG instance, and other names to their caller', () => {
    expect(builtinTools(['web_search', 'bash', 'github'])).toHaveLength(1);
    expect(isBuiltinTool('github')).toBe(false);
    // A name the map holds only by inheritance is no tool.
    expect(builtinTools(['constructor', 'toString'])).toEqual([]);
    expect(isBuiltinTool('constructor')).toBe(false);
  });
});
