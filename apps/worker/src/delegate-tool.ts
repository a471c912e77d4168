/**
 * `delegate`: the model hands tasks to other agents and gets their answers back. The call starts child
 * tasks (child-tasks.ts in the tasks package), each with the files it names copied from this task's
 * folder; the run then pauses (interrupt `children`), holding no worker, and the call is answered with
 * each child's status and answer once all have ended. A call past a limit, or naming an agent it may not
 * start, is answered as a failed call the model can act on.
 */
import { closeSync, fstatSync } from 'node:fs';
import { z } from 'zod';
import type { AgentSettings } from '@agentq/config';
import type { AgentQueues } from '@agentq/scheduling';
import type { RoomLimits, TaskRecord, TaskStore } from '@agentq/store';
import { ChildrenRefused, inputPathProblem, MAX_PROMPT_BYTES, startChildren, type ChildInput } from '@agentq/tasks';
import { defineTool, openInWorkdir, readContent, ToolError, workdirPathOf, type Tool } from '@agentq/tools';

/** The most a child's files may hold together (they are stored with it, like a submit's files). */
export const DELEGATE_FILES_BYTES = 8 * 1024 * 1024;

export function delegateTool(options: {
  store: TaskStore;
  queues: AgentQueues;
  /** The task whose run calls it (as its run's claim read it). */
  record: TaskRecord;
  settings: NonNullable<AgentSettings['delegate']>;
  /** The tenant's room: what children store counts toward its `limits.mb`. */
  room: RoomLimits;
}): Tool {
  const { settings } = options;
  const agents = settings.agents;
  return defineTool({
    name: 'delegate',
    description: `Hand tasks to other agents (${agents.join(', ')}); they run at the same time, and this call answers with each one's result once all have ended. Each task must say everything its agent needs: it does not see this conversation. At most ${settings.maxChildren} tasks a call.`,
    schema: z.object({
      tasks: z
        .array(
          z.object({
            agent: z.enum(agents as [string, ...string[]]).describe('The agent that does it'),
            // Held to a submit's bound, in bytes as stored: a child's prompt is no bigger than a task's.
            prompt: z
              .string()
              .min(1)
              .max(MAX_PROMPT_BYTES)
              .refine((text) => Buffer.byteLength(text) <= MAX_PROMPT_BYTES, {
                message: `a prompt may be at most ${MAX_PROMPT_BYTES} bytes (UTF-8): put long inputs in a file and give it in files`,
              })
              .describe('What to do, with everything it needs to know'),
            files: z
              .array(z.string().min(1))
              .max(100)
              .optional()
              .describe('Paths in your work directory to copy into its own'),
          }),
        )
        .min(1)
        .describe('The tasks to start'),
    }),
    async run(args, context) {
      if (!context.call) throw new Error('delegate runs only as a call of a step');
      // Counted before any file is read: a call past the limit copies nothing.
      if (args.tasks.length > settings.maxChildren)
        return {
          ok: false,
          output: `Nothing was started: one delegate call may start at most ${settings.maxChildren} tasks; this one asked for ${args.tasks.length}. Start fewer (or fold several into one task).`,
        };
      try {
        // Read one after another against one budget: a call never holds more than DELEGATE_FILES_BYTES.
        const budget = { left: DELEGATE_FILES_BYTES };
        const children: ChildInput[] = [];
        for (const task of args.tasks)
          children.push({
            agent: task.agent,
            prompt: task.prompt,
            ...(task.files?.length ? { inputs: await readFiles(context.workdir, task.files, budget) } : {}),
          });
        const ids = await startChildren({
          store: options.store,
          queues: options.queues,
          parent: options.record,
          step: context.call.step,
          children,
          limits: settings,
          room: options.room,
        });
        return {
          ok: true,
          output: `started ${ids.length} task${ids.length === 1 ? '' : 's'} (${ids.join(', ')}): their answers follow when all have ended`,
          interrupt: { kind: 'children', children: ids },
        };
      } catch (error) {
        if (error instanceof ChildrenRefused || error instanceof ToolError)
          return { ok: false, output: `Nothing was started: ${error.message}` };
        throw error;
      }
    },
  });
}

/** The files a child is given, read from this task's folder as the file tools read (never outside it). */
async function readFiles(
  workdir: string,
  paths: readonly string[],
  budget: { left: number },
): Promise<Array<{ path: string; content: Buffer }>> {
  const files: Array<{ path: string; content: Buffer }> = [];
  for (const path of paths) {
    // Kept under the name the path has in this folder (`./a//b` is `a/b`), which must be one a folder can hold.
    const name = workdirPathOf({ workdir, path }).path;
    const problem = inputPathProblem(name);
    if (problem) throw new ToolError('invalid_arguments', `the file ${problem}.`);
    const file = await openInWorkdir({ workdir, path, access: 'read' });
    try {
      const stat = fstatSync(file);
      if (!stat.isFile()) throw new ToolError('invalid_arguments', `"${path}" is not a file: give files, not folders.`);
      if (stat.size > budget.left)
        throw new ToolError(
          'file_too_large',
          `the files to copy pass the ${DELEGATE_FILES_BYTES} bytes a call may copy at "${path}": copy fewer, or tell each task where to find what it needs.`,
        );
      const content = await readContent(file, budget.left);
      budget.left -= content.length;
      files.push({ path: name, content });
    } finally {
      closeSync(file);
    }
  }
  return files;
}
