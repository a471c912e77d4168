/** `agentq watch ID`: a task's steps as they happen, readable in a terminal, ending with the answer. */
import { isLiveDelta, type TaskEvent } from '@agentq/contract';
import type { ApiClient, TaskSummary } from '../api-client.js';
import { foldText, indent, oneLine, paint, terminalSafeDeep } from '../terminal.js';
import { UsageError } from '../usage-error.js';

export async function watchCommand(
  client: ApiClient,
  taskId: string | undefined,
  flags: { json?: boolean },
): Promise<number> {
  if (!taskId) throw new UsageError('usage: agentq watch ID [--json]');
  let tokens = 0;
  // The answer forming (llm.delta, live): its text as it comes, on a line of its own; its llm.response
  // then says the rest without the text again.
  let forming = false;
  let formed = false;
  for await (const streamed of client.events(taskId)) {
    if (flags.json) {
      process.stdout.write(`${JSON.stringify(streamed)}\n`);
      continue;
    }
    if (isLiveDelta(streamed)) {
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
    if (event.type === 'llm.response' && formed) {
      formed = false;
      event.data.content = null;
    }
    if (event.type === 'llm.response' && event.data.usage)
      tokens += event.data.usage.promptTokens + event.data.usage.completionTokens;
    const line = describe(event, taskId, tokens);
    if (line) process.stdout.write(`${paint.dim(new Date(event.ts).toLocaleTimeString())} ${line}\n`);
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

function describe(event: TaskEvent, taskId: string, tokens: number): string | undefined {
  if (event.taskId !== taskId) {
    // A subtask's end, in its root's stream.
    const data =
      event.type === 'task.completed' || event.type === 'task.failed' || event.type === 'task.cancelled'
        ? event.data
        : {};
    const status = data.status ?? event.type.replace('task.', '');
    return `${status === 'completed' ? paint.green('✓') : paint.red('✗')} step ${data.planId ?? ''} (${event.agent ?? ''}) ${status}`;
  }
  switch (event.type) {
    case 'task.queued':
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
      return `step ${event.data.planId} queued in ${event.data.agent}`;
    case 'task.waiting':
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
