/**
 * Approval before a tool runs: an agent's configuration names the calls a person must approve. Such a
 * call is not run: its task goes `waiting` with the call, and `POST /v1/tasks/:id/approvals` decides it.
 * And what else a task may wait for (`WaitingFor`).
 */

/**
 * A rule of an agent's `approvals`: which of its calls wait for a person. `tool` alone: every call of
 * it. With `matches`: only calls whose `argument` matches the pattern (a file tool's path as resolved in
 * the work directory; any other argument as written and as each path it may name there; a fence block
 * that saves a file as a `write_file` of it). With `unlessHosts`: only
 * calls whose URL (`argument`, default `url`) goes to a host not in the list (`*.example.com`: its
 * subdomains), at every redirect too.
 */
export interface ApprovalRule {
  /** A tool's name, or a prefix ending in `*` (e.g. an MCP server's tools, `github_*`). */
  tool: string;
  argument?: string;
  matches?: string;
  unlessHosts?: string[];
}

/** A call that waits for a person, as a waiting task shows it. */
export interface PendingCallView {
  /** The call's id, as `POST /v1/tasks/:id/approvals` names it. */
  id: string;
  /** The tool and its arguments, as the model wrote them (JSON text). */
  name: string;
  arguments: string;
  /** Which rule asks for approval, in words. */
  rule: string;
  /** Null until it is decided. */
  decision: ApprovalDecision | null;
}

export interface ApprovalDecision {
  approve: boolean;
  reason?: string;
  /** It was rejected because nobody decided in time (the agent's `approvals.timeoutMinutes`). */
  expired?: true;
}

/** What a `waiting` task waits for (or a `queued` one, for its concurrency key). */
export type WaitingFor =
  /** Its model asked its user a question (`ask_user`): `POST /v1/tasks/:id/input` answers. */
  | { kind: 'answer'; question: string }
  /** Calls that need a person's approval; it resumes once every one is decided. */
  | { kind: 'approval'; calls: PendingCallView[]; expiresAt: string | null }
  /** Queued: `limit` tasks with its concurrency key run; it starts when one ends, in submit order. */
  | { kind: 'concurrency'; key: string; limit: number }
  /**
   * Its model's `delegate` call started `children`; it resumes once each has ended. `running`: those that
   * have not (a task's own view reads them; a list's row says all of them).
   */
  | { kind: 'children'; children: string[]; running: string[] };

/**
 * What a stored call's id may be: short, and only characters safe in a URL path and a JSON body, so
 * that `POST /v1/tasks/:id/approvals` (and a CLI argument, a link) can name every call a task holds.
 * A model's id that is not one is replaced before its answer is stored (core's unique-call-ids.ts).
 */
export const MAX_CALL_ID_LENGTH = 200;
export const CALL_ID_PATTERN = new RegExp(`^[A-Za-z0-9_.:-]{1,${MAX_CALL_ID_LENGTH}}$`);

/** The body of `POST /v1/tasks/:id/approvals`: one call decided. */
export interface ApprovalInput {
  callId: string;
  approve: boolean;
  /** Why; a rejected call's reason is what its model reads. */
  reason?: string;
}

/** The longest reason a decision may give. */
export const MAX_APPROVAL_REASON = 2_000;
