/**
 * Runs the tool calls of one step in order, whichever protocol asked for them, and commits what
 * happened as it happens. Cancellation is checked before and after each tool (the signal also kills a
 * running tool's process tree). With fences, the first failure stops the remaining blocks. The step
 * completes in the same commit as its last result, so a resumed job never completes a step twice.
 */
import { keptArguments, keptOutput } from './event-text.js';
import type { Message } from '@agentq/protocol';
import { ASK_USER_TOOL, fileOwner, ToolError, writeWorkdirFile, type Tool, type ToolContext } from '@agentq/tools';
import type { ApprovalDecision, ApprovalRule, EventInput } from '@agentq/contract';
import { approvalRuleFor, approvalRuleForRedirect, type ApprovalCheck } from './approval-rules.js';
import { ANNOUNCE_WITHIN_MS, type AgentJournal } from './journal.js';
import type { AwaitedCall, Interrupt } from './interrupts.js';
import { runToolCall } from './run-tool-call.js';
import type { CallResult, PlannedCall, ToolProtocol } from './tool-protocol.js';

export interface ExecuteToolsOptions {
  calls: readonly PlannedCall[];
  protocol: ToolProtocol;
  tools: readonly Tool[];
  journal: AgentJournal;
  context: ToolContext;
  step: number;
  /** Calls a person must approve before they run (the agent's rules), and this step's decisions so far. */
  approvals?: Approvals;
  /**
   * The answer that asked for these calls is held (takeModelTurn's `holdToolsAnswer`): the first call's
   * announcement is written with it before the call runs, which checks the run still holds its task.
   */
  answerHeld?: boolean;
}

export interface Approvals {
  rules: readonly ApprovalRule[];
  /** By call id: what was decided of this step's calls. */
  decisions?: ReadonlyMap<string, ApprovalDecision>;
  /** The approved calls of this step that began in an earlier run (its worker died): none runs again. */
  started?: readonly string[];
}

export type ExecuteToolsOutcome =
  | { status: 'done' | 'cancelled'; messages: Message[] }
  /**
   * The step paused (interrupts.ts): a question, a call that started children, or (nothing ran) calls
   * that wait for a person's decision first.
   */
  | { status: 'interrupted'; messages: Message[]; interrupt: Interrupt };

/** Results of calls not run that go out in one commit: a hostile answer's thousands stay small writes. */
const HELD_PER_COMMIT = 256;

export async function executeTools(options: ExecuteToolsOptions): Promise<ExecuteToolsOutcome> {
  const { calls, protocol, journal, step, context } = options;
  const results: CallResult[] = [];
  const committed: Message[] = [];
  const commit = async (messages: Message[], events: EventInput[], completesStep: boolean) => {
    if (completesStep) events.push({ type: 'step.completed', step, data: { step } });
    await journal.commit({ messages, events, ...(completesStep ? { steps: step } : {}) });
    committed.push(...messages);
  };
  const resultEvent = (result: CallResult, durationMs: number): EventInput => ({
    type: 'tool.result',
    step,
    data: {
      id: result.call.id,
      name: result.call.name,
      ok: result.status === 'ok',
      ...(result.status === 'not_run' ? { skipped: true } : {}),
      ...keptOutput(result.output),
      durationMs,
    },
  });
  /**
   * A call that started children (its tool's interrupt): the rest of the step runs, then the step pauses
   * until their answers come (its resume writes the call's answer and completes the step).
   */
  let started: { call: PlannedCall; interrupt: Interrupt } | undefined;
  /** Commits results; the last ones also carry the step's own messages and complete it (unless it pauses). */
  const record = async (recorded: CallResult[], durationMs: number, isLast: boolean) => {
    results.push(...recorded);
    const messages = recorded
      .map((result) => protocol.messageForResult(result))
      .filter((message): message is Message => message !== undefined);
    if (isLast && !started) messages.push(...protocol.messagesForStep(results));
    await commit(
      messages,
      recorded.map((result) => resultEvent(result, durationMs)),
      isLast && !started,
    );
  };
  // Calls past the cap are answered together at the end, a bounded number a commit.
  const runnable = calls.filter((call) => call.notRun === undefined);
  const held = calls.filter((call) => call.notRun !== undefined);
  // Every call of the step that needs a person is decided before any runs: nothing runs twice, and a
  // person sees them all at once.
  const check: ApprovalCheck | undefined = options.approvals && {
    rules: options.approvals.rules,
    workdir: context.workdir,
    tools: options.tools,
  };
  const ruleOf = (call: PlannedCall) => (check ? approvalRuleFor({ ...check, call }) : undefined);
  // A redirect http_fetch would follow passes the rules as a call to where it goes.
  const contextFor = (call: PlannedCall): ToolContext =>
    check
      ? { ...context, redirectNeedsApproval: (url: string) => approvalRuleForRedirect({ ...check, call, url }) }
      : context;
  const awaited = runnable.flatMap((call): AwaitedCall[] => {
    const rule = ruleOf(call);
    return rule && !options.approvals?.decisions?.has(call.id)
      ? [{ id: call.id, name: call.name, arguments: call.arguments, rule }]
      : [];
  });
  if (awaited.length)
    return { status: 'interrupted', messages: [], interrupt: { kind: 'approval', step, calls: awaited } };
  const begun = new Set(options.approvals?.started);

  for (const [index, call] of runnable.entries()) {
    const isLast = index === runnable.length - 1 && held.length === 0;
    if (context.signal.aborted) {
      // What ran stays recorded; the step does not complete.
      if (results.length) await commit(protocol.messagesForStep(results), [], false);
      return { status: 'cancelled', messages: committed };
    }
    if (call.name === ASK_USER_TOOL && !call.error && started) {
      // One interrupt a step: the question waits for the answers the step's children bring.
      await record(
        [
          {
            call,
            status: 'not_run',
            output: 'not run: this step waits for the tasks an earlier call started; ask after their answers',
          },
        ],
        0,
        isLast,
      );
      continue;
    }
    if (call.name === ASK_USER_TOOL && !call.error) {
      const question = readQuestion(call);
      if (question)
        return pauseStep({
          call,
          said: `asked the user: ${question} (their answer follows)`,
          why: 'the step paused to ask the user',
          interrupt: { kind: 'question', callId: call.id, question },
          rest: [...runnable.slice(index + 1), ...held],
        });
    }
    if (protocol.stopsAtFirstFailure && results.some((result) => result.status === 'failed')) {
      await record([{ call, status: 'not_run', output: 'not run, an earlier block failed.' }], 0, isLast);
      continue;
    }
    if (begun.has(call.id)) {
      // Approved, begun by a run that stopped before its result: a person approved one run of it.
      await record([{ call, status: 'failed', output: STOPPED_TEXT }], 0, isLast);
      continue;
    }
    // An approved call is recorded as begun before it runs, in a write of its own: whatever happens to
    // this worker from now on, it never runs again. Any other call's announcement goes out with its
    // result, or by itself if the call runs long enough to be seen running. The run's hold on its task
    // was checked by the write just before (the answer, or the last result); a held answer is written
    // with its first call's announcement, now, for that check.
    const approved = options.approvals?.decisions?.get(call.id)?.approve === true;
    if (approved) begun.add(call.id);
    const withAnswer = index === 0 && options.answerHeld === true;
    await journal.commit({
      events: [
        {
          type: 'tool.call',
          step,
          data: {
            id: call.id,
            name: call.name,
            ...keptArguments(call.arguments),
            ...(call.label ? { label: call.label } : {}),
          },
        },
      ],
      ...(approved
        ? { startedCalls: { step, ids: [...begun] } }
        : withAnswer
          ? {}
          : { lazy: true, writeWithinMs: ANNOUNCE_WITHIN_MS }),
    });
    const began = performance.now();
    // Read again as it is about to run: a call before it may have changed what its path names (a link).
    const rule = ruleOf(call);
    const decision = rule === undefined ? undefined : options.approvals?.decisions?.get(call.id);
    const result: CallResult =
      rule !== undefined && decision === undefined
        ? { call, status: 'failed', output: heldLateText(rule) }
        : decision && !decision.approve
          ? { call, status: 'failed', output: rejectionText(decision) }
          : await runPlannedCall(call, options.tools, { ...contextFor(call), call: { id: call.id, step } });
    if (result.interrupt && started) {
      // A second call that started children in one step: not how the tool is used; it is told so.
      await record(
        [
          {
            call,
            status: 'failed',
            output:
              "Only one delegate call a step waits for its tasks: this one started them, but its answer comes with the first call's. Call delegate once a step.",
          },
        ],
        Math.round(performance.now() - began),
        isLast,
      );
      continue;
    }
    if (result.interrupt) {
      // Its answer is written when its children have ended; the calls after it run now.
      started = { call, interrupt: { ...result.interrupt, callId: call.id } };
      results.push(result);
      if (isLast) break;
      continue;
    }
    await record([result], Math.round(performance.now() - began), isLast);
    if (context.signal.aborted) return { status: 'cancelled', messages: committed };
  }
  for (let start = 0; start < held.length; start += HELD_PER_COMMIT) {
    const chunk = held
      .slice(start, start + HELD_PER_COMMIT)
      .map((call): CallResult => ({ call, status: 'not_run', output: call.notRun! }));
    await record(chunk, 0, start + HELD_PER_COMMIT >= held.length);
  }
  if (started) {
    // The step's own messages (the fences' feedback) go with the commit that makes the task wait.
    const messages = protocol.messagesForStep(results);
    await journal.commit({ messages, lazy: true });
    committed.push(...messages);
    return { status: 'interrupted', messages: committed, interrupt: started.interrupt };
  }
  return { status: 'done', messages: committed };

  /**
   * The step pauses at `call` (a question, or a call that started children): the calls after it are
   * reported as not run, and the step stays open until the call's answer is written (its resume).
   */
  async function pauseStep(waiting: {
    call: PlannedCall;
    /** What the fences protocol's summary of the step says of the call. */
    said: string;
    /** Why the calls after it did not run. */
    why: string;
    interrupt: Interrupt;
    rest: readonly PlannedCall[];
  }): Promise<ExecuteToolsOutcome> {
    const skipped = waiting.rest.map((call): CallResult => ({
      call,
      status: 'not_run',
      output: `not run: ${waiting.why}`,
    }));
    const asked: CallResult = { call: waiting.call, status: 'ok', output: waiting.said };
    const messages: Message[] = [];
    for (const result of skipped) {
      const message = protocol.messageForResult(result);
      if (message) messages.push(message);
    }
    messages.push(...protocol.messagesForStep([...results, asked, ...skipped]));
    await commit(
      messages,
      skipped.map((result) => resultEvent(result, 0)),
      false,
    );
    return { status: 'interrupted', messages: committed, interrupt: waiting.interrupt };
  }
}

/** What the model reads of a rejected call: that it did not run, and why, so that it can do otherwise. */
function rejectionText(decision: ApprovalDecision): string {
  const why = decision.expired
    ? 'nobody approved it in time'
    : decision.reason
      ? `a person rejected it: ${decision.reason}`
      : 'a person rejected it';
  return `Not run: this call needs a person's approval, and ${why}. Do not repeat it as it was; find another way or answer without it.`;
}

/** What the model reads of an approved call whose run began, but whose worker stopped before it ended. */
const STOPPED_TEXT =
  'Not run again: this call was approved and started, but the worker running it stopped before it ended, so it may have run in part or in whole (its output is lost). Check what it did before you repeat it; a new call needs a new approval.';

/** A call that needed no approval when its step began, and does now that the calls before it ran. */
function heldLateText(rule: string): string {
  return `Not run: the calls before it in this answer changed what it touches, and it now needs a person's approval (${rule}). Send it again, by itself, to ask for approval.`;
}

function readQuestion(call: PlannedCall): string | undefined {
  try {
    const question = (JSON.parse(call.arguments) as { question?: unknown }).question;
    return typeof question === 'string' && question.trim() ? question.trim() : undefined;
  } catch {
    return undefined;
  }
}

async function runPlannedCall(call: PlannedCall, tools: readonly Tool[], context: ToolContext): Promise<CallResult> {
  if (call.error) return { call, status: 'failed', output: call.error };
  try {
    await context.prepareWorkdir?.();
  } catch (error) {
    return {
      call,
      status: 'failed',
      output: `The work directory could not be made (${(error as Error).message}); nothing ran.`,
    };
  }
  if (call.savePath !== undefined) {
    try {
      const owner = fileOwner(context);
      await writeWorkdirFile({
        workdir: context.workdir,
        path: call.savePath,
        content: call.saveContent ?? '',
        ...(owner ? { owner } : {}),
      });
    } catch (error) {
      return {
        call,
        status: 'failed',
        output:
          error instanceof ToolError ? error.message : `Could not save ${call.savePath}: ${(error as Error).message}`,
      };
    }
  }
  const result = await runToolCall({ call, tools, context });
  const saved = call.savePath !== undefined ? `(saved as ${call.savePath})\n` : '';
  return {
    call,
    status: result.ok ? 'ok' : 'failed',
    output: saved + result.output,
    ...(result.interrupt ? { interrupt: result.interrupt } : {}),
  };
}
