/**
 * `agentq watch ID`: a task's steps as they happen, readable in a terminal, ending with the answer; its
 * descendants' steps (children a `delegate` call started, a plan's subtasks, theirs) indented under it
 * by depth, each line naming its task, from the task's tree stream.
 */
import { isLiveDelta, TREE_TASK_LIMIT, type TaskEvent } from '@agentq/contract';
import type { ApiClient, TaskSummary } from '../api-client.js';
import { foldText, indent, oneLine, paint, terminalSafeDeep } from '../terminal.js';
import { UsageError } from '../usage-error.js';

export async function watchCommand(
  client: ApiClient,
  taskId: string | undefined,
  flags: { json?: boolean },
): Promise<number> {
  if (!taskId) throw new UsageError('usage: agentq watch ID [--json]');
  // Each task's tokens so far, and its agent (not every event names it).
  const tokens = new Map<string, number>();
  const agents = new Map<string, string>();
  // The watched task's answer forming (llm.delta, live): its text as it comes, on a line of its own; its
  // llm.response then says the rest without the text again. A descendant's shows in its llm.response.
  let forming = false;
  let formed = false;
  for await (const streamed of client.events(taskId, { descendants: true })) {
    if (flags.json) {
      process.stdout.write(`${JSON.stringify(streamed)}\n`);
      continue;
    }
    if (streamed.type === 'tree.limit') {
      if (forming) process.stdout.write('\n');
      forming = false;
      const { taskId: first } = terminalSafeDeep(streamed);
      process.stdout.write(
        paint.yellow(
          `(this tree holds more than ${TREE_TASK_LIMIT} tasks: the others, from ${first}, are not shown; agentq watch ${first} shows its own)\n`,
        ),
      );
      continue;
    }
    if (isLiveDelta(streamed)) {
      if (streamed.taskId !== taskId) continue;
      const { text, restart } = terminalSafeDeep(streamed).data;
      if (restart && forming) process.stdout.write(paint.yellow(' (the stream broke; asked again)\n'));
      if (restart) forming = false;
      if (!text) continue;
      if (!forming) process.stdout.write(paint.dim('  … '));
      process.stdout.write(text);
      forming = formed = true;
      continue;
    }
    if (forming) process.stdout.write('\n');
    forming = false;
    // What the model and the task's tools wrote is shown, never run by the terminal.
    const event = terminalSafeDeep(streamed);
    if (event.type === 'llm.response' && formed && event.taskId === taskId) {
      formed = false;
      event.data.content = null;
    }
    if (event.type === 'llm.response' && event.data.usage)
      tokens.set(
        event.taskId,
        (tokens.get(event.taskId) ?? 0) + event.data.usage.promptTokens + event.data.usage.completionTokens,
      );
    if (event.agent) agents.set(event.taskId, event.agent);
    const line = describe(event, taskId, tokens.get(event.taskId) ?? 0);
    if (!line) continue;
    const time = paint.dim(new Date(event.ts).toLocaleTimeString());
    const below = descendantOf(taskId, event.taskId);
    if (!below) process.stdout.write(`${time} ${line}\n`);
    else {
      // Under its parent: two spaces a level, every line of it, after a label naming its task.
      const pad = '  '.repeat(below.depth);
      const agent = agents.get(event.taskId);
      const label = paint.bold(`${below.name}${agent ? ` ${agent}` : ''}`);
      process.stdout.write(`${time} ${pad}${label} ${line.split('\n').join(`\n${pad}`)}\n`);
    }
  }
  const task = terminalSafeDeep(await client.call<TaskSummary>('GET', `/v1/tasks/${encodeURIComponent(taskId)}`));
  if (!flags.json) {
    if (task.result)
      process.stdout.write(
        `\n${paint.bold(task.status === 'completed' ? 'Answer' : 'Partial results')}\n${task.result}\n`,
      );
    if (task.error) process.stdout.write(`\n${paint.red(`${task.error.code}: ${task.error.message}`)}\n`);
  }
  return task.status === 'completed' ? 0 : 1;
}

/**
 * A descendant's name below the watched task (`c3.1`, `v1.s2.c2.1`) and how deep it is (each level
 * is two parts of its id); undefined for the task itself.
 */
function descendantOf(taskId: string, id: string): { name: string; depth: number } | undefined {
  if (!id.startsWith(`${taskId}.`)) return undefined;
  const name = id.slice(taskId.length + 1);
  return { name, depth: Math.ceil(name.split('.').length / 2) };
}

/** A line for one of the tree's events (`watched`: the task watch follows, whose descendants' names are relative to it). */
function describe(event: TaskEvent, watched: string, tokens: number): string | undefined {
  const taskId = event.taskId;
  switch (event.type) {
    case 'task.queued':
      if (event.data.children) return `queued again: the ${event.data.children.length} it started have ended`;
      return event.data.answer
        ? `answered: ${event.data.answer}`
        : event.data.retry
          ? paint.yellow(`queued again (retry ${event.data.retry}): ${event.data.reason ?? ''}`)
          : event.data.modelUnreachable || event.data.rateLimited
            ? paint.yellow(`waiting, no attempt spent: ${event.data.reason ?? ''}`)
            : event.data.concurrencyKey !== undefined
              ? `queued; it runs when its concurrency key ${event.data.concurrencyKey} has room`
              : 'queued';
    case 'task.started':
      return `started on ${event.worker ?? '?'}${event.data.resumed ? ' (resumed)' : ''}`;
    case 'llm.request':
      return paint.cyan(`step ${event.step ?? ''} · asking ${event.data.model}`);
    case 'llm.response': {
      const { toolCalls, content, durationMs } = event.data;
      const text = content ? `\n${indent(foldText(content, 8))}` : '';
      return `model answered in ${durationMs} ms${toolCalls.length ? ` · calls ${toolCalls.map((call) => call.name).join(', ')}` : ''} · ${tokens} tokens so far${text}`;
    }
    case 'reasoning':
      return paint.dim(`(reasoning, ${event.data.text.length} characters)`);
    case 'tool.call':
      return `${paint.bold(`→ ${event.data.label ?? event.data.name}`)} ${paint.dim(oneLine(event.data.arguments, 160))}`;
    case 'tool.result': {
      const { ok, skipped, durationMs, output } = event.data;
      return `${ok ? paint.green('  ok') : paint.red(skipped ? '  not run' : '  failed')} ${paint.dim(`${durationMs} ms`)}\n${indent(foldText(output))}`;
    }
    case 'step.completed':
      return undefined;
    case 'mcp.unavailable':
      return paint.yellow(
        `MCP server ${event.data.server} unavailable, going on without its tools: ${event.data.reason}`,
      );
    case 'compaction':
      return paint.dim(`context summarised: ${event.data.tokensBefore} → ${event.data.tokensAfter} tokens`);
    case 'plan.created':
      return `plan: ${event.data.plan.map((node) => `\n    ${node.id} [${node.agent}]${node.need.length ? ` after ${node.need.join(', ')}` : ''}: ${oneLine(node.task, 80)}`).join('')}`;
    case 'subtask.queued':
      return event.data.planId
        ? `step ${event.data.planId} queued in ${event.data.agent}`
        : `started ${descendantOf(watched, event.data.subtaskId)?.name ?? event.data.subtaskId} on ${event.data.agent}`;
    case 'task.waiting':
      if (event.data.children)
        return paint.yellow(
          `waiting for the ${event.data.children.length} task${event.data.children.length === 1 ? '' : 's'} it started (shown below it as they run)`,
        );
      return event.data.approvals
        ? paint.yellow(
            `waiting for approval:${event.data.approvals.map((call) => `\n    ${call.id}: ${call.name} ${oneLine(call.arguments, 120)} (${call.rule})`).join('')}\n  decide each with agentq approve ${taskId} CALL, or agentq reject ${taskId} CALL --reason TEXT`,
          )
        : paint.yellow(
            `waiting for an answer: ${event.data.question ?? ''} (answer with POST /v1/tasks/${taskId}/input)`,
          );
    case 'approval.decided': {
      const { id, name, approve, reason, expired } = event.data;
      const verdict = expired ? 'rejected: nobody decided in time' : approve ? 'approved' : 'rejected';
      return `${approve ? paint.green(verdict) : paint.red(verdict)} ${id} (${name})${reason ? `: ${reason}` : ''}`;
    }
    case 'task.completed':
      return paint.green('completed');
    case 'task.failed':
      return paint.red(`failed: ${event.data.error?.message ?? event.data.reason ?? ''}`);
    case 'task.cancelled':
      return paint.yellow('cancelled');
  }
}
