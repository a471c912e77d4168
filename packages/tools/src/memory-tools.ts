/**
 * The shared memory of a planned task: its subtasks' agents leave notes for each other (a value
 * computed by one, read by the next), alongside the results that flow along the plan's needs.
 */
import { z } from 'zod';
import { capOutput } from './cap-output.js';
import { ToolError } from './errors.js';
import { defineTool, type ToolContext } from './tool.js';

const MAX_VALUE = 100_000;
/**
 * Notes one task's shared memory holds at most (with MAX_VALUE, 10 MB): a model steered to write note
 * after note, step after step, would otherwise fill Redis, which every tenant shares.
 */
export const MAX_NOTES = 100;

function scratchpadOf(context: ToolContext) {
  if (!context.scratchpad) throw new ToolError('tool_unavailable', 'This task has no shared memory.');
  return context.scratchpad;
}

export const memorySetTool = defineTool({
  name: 'memory_set',
  description:
    "Save a note in the task's shared memory, for the other subtasks of the same task to read. Overwrites the key.",
  schema: z.object({
    key: z.string().trim().min(1).max(200).describe('A short name, e.g. "dataset_path"'),
    value: z.string().max(MAX_VALUE).describe('The note'),
  }),
  async run(args, context) {
    if (!(await scratchpadOf(context).set(args.key, args.value))) {
      return {
        ok: false,
        output: `Not saved: the shared memory holds ${MAX_NOTES} notes, its most. Overwrite a note you no longer need (memory_list shows them), or put several values in one note.`,
      };
    }
    return { ok: true, output: `Saved "${args.key}" (${args.value.length} characters) in the shared memory.` };
  },
});

export const memoryGetTool = defineTool({
  name: 'memory_get',
  description: "Read a note from the task's shared memory.",
  schema: z.object({ key: z.string().trim().min(1).describe("The note's key") }),
  async run(args, context) {
    const value = await scratchpadOf(context).get(args.key);
    if (value === undefined) {
      const keys = (await scratchpadOf(context).list()).map((entry) => entry.key);
      return {
        ok: false,
        output: `No note "${args.key}" in the shared memory. Keys there: ${keys.join(', ') || 'none'}.`,
      };
    }
    return { ok: true, output: capOutput(value, context.outputLimit) };
  },
});

export const memoryListTool = defineTool({
  name: 'memory_list',
  description: "List the notes in the task's shared memory, with the start of each.",
  schema: z.object({}),
  async run(_args, context) {
    const entries = await scratchpadOf(context).list();
    if (entries.length === 0) return { ok: true, output: 'The shared memory is empty.' };
    return {
      ok: true,
      output: entries
        .map((entry) => `${entry.key}: ${entry.value.length > 80 ? `${entry.value.slice(0, 77)}...` : entry.value}`)
        .join('\n'),
    };
  },
});

export const memoryTools = [memorySetTool, memoryGetTool, memoryListTool];
