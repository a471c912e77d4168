/**
 * The events the loop hands its journal: the contract's event inputs (type, step, typed data). The
 * queue layer adds the envelope (`id, taskId, rootId, seq, ts, agent, worker`) when it stores them.
 */
export type { EventInput as AgentEventInput, EventType } from '@agentq/contract';
export { TERMINAL_EVENT_TYPES } from '@agentq/contract';
