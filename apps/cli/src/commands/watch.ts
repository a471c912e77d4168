/** `agentq watch ID`: a task's steps as they happen, readable in a terminal, ending with the answer. */
import type { ApiClient, StreamedEvent, TaskSummary } from '../api-client.js';
import { foldText, indent, paint } from '../terminal.js';
import { UsageError } from '../usage-error.js';

export async function watchCommand(client: ApiClient, taskId: string | undefined, flags: { json?: boolean }): Promise<number> {
  if (!taskId) throw new UsageError('usage: agentq watch ID [--json]');
  let tokens = 0;
  for await (const event of client.events(taskId)) {
    if (flags.json) {
      process.stdout.write(`${JSON.stringify(event)}\n`);
      continue;
    }
    const usage = event.type === 'llm.response' ? (event.data.usage as { promptTokens: number; completionTokens: number } | null) : null;
    if (usage) tokens += usage.promptTokens + usage.completionTokens;
    const line = describe(event, taskId, tokens);
    if (line) process.stdout.write(`${paint.dim(new Date(event.ts).toLocaleTimeString())} ${line}\n`);
  }
  const task = await client.call<TaskSummary>('GET', `/v1/tasks/${encodeURIComponent(taskId)}`);
  if (!flags.json) {
    if (task.result) process.stdout.write(`\n${paint.bold(task.status === 'completed' ? 'Answer' : 'Partial results')}\n${task.result}\n`);
    if (task.error) process.stdout.write(`\n${paint.red(`${task.error.code}: ${task.error.message}`)}\n`);
  }
  return task.status === 'completed' ? 0 : 1;
}

function describe(event: StreamedEvent, taskId: string, tokens: number): string | undefined {
  const data = event.data;
  if (event.taskId !== taskId) {
    const status = String(data.status ?? event.type.replace('task.', ''));
    return `${status === 'completed' ? paint.green('✓') : paint.red('✗')} step ${String(data.planId ?? '')} (${event.agent ?? ''}) ${status}`;
  }
  switch (event.type) {
    case 'task.queued':
      return data.answer ? `answered: ${String(data.answer)}` : data.retry ? paint.yellow(`queued again (retry ${String(data.retry)}): ${String(data.reason ?? '')}`) : 'queued';
    case 'task.started':
      return `started on ${event.worker ?? '?'}${data.resumed ? ' (resumed)' : ''}`;
    case 'llm.request':
      return paint.cyan(`step ${event.step ?? ''} · asking ${String(data.model ?? 'the model')}`);
    case 'llm.response': {
      const calls = (data.toolCalls as Array<{ name: string }> | undefined) ?? [];
      const text = data.content ? `\n${indent(foldText(String(data.content), 8))}` : '';
      return `model answered in ${String(data.durationMs)} ms${calls.length ? ` · calls ${calls.map((call) => call.name).join(', ')}` : ''} · ${tokens} tokens so far${text}`;
    }
    case 'reasoning':
      return paint.dim(`(reasoning, ${String(data.text ?? '').length} characters)`);
    case 'tool.call':
      return `${paint.bold(`→ ${String(data.label ?? data.name)}`)} ${paint.dim(clip(String(data.arguments ?? ''), 160))}`;
    case 'tool.result':
      return `${data.ok ? paint.green('  ok') : paint.red(data.skipped ? '  not run' : '  failed')} ${paint.dim(`${String(data.durationMs)} ms`)}\n${indent(foldText(String(data.output ?? '')))}`;
    case 'step.completed':
      return undefined;
    case 'compaction':
      return paint.dim(`context summarised: ${String(data.tokensBefore)} → ${String(data.tokensAfter)} tokens`);
    case 'plan.created':
      return `plan: ${(data.plan as Array<{ id: string; agent: string; task: string; need: string[] }>).map((node) => `\n    ${node.id} [${node.agent}]${node.need.length ? ` after ${node.need.join(', ')}` : ''}: ${clip(node.task, 80)}`).join('')}`;
    case 'subtask.queued':
      return `step ${String(data.planId)} queued in ${String(data.agent)}`;
    case 'task.waiting':
      return paint.yellow(`waiting for an answer: ${String(data.question ?? '')} (answer with POST /v1/tasks/${taskId}/input)`);
    case 'task.completed':
      return paint.green('completed');
    case 'task.failed':
      return paint.red(`failed: ${String((data.error as { message?: string } | undefined)?.message ?? data.reason ?? '')}`);
    case 'task.cancelled':
      return paint.yellow('cancelled');
    default:
      return event.type;
  }
}

function clip(text: string, length: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat;
}
