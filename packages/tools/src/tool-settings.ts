/**
 * A run's tools, ready: where they work, how bash and python run (jailed or not), the disk quota, the
 * network rules, the shared memory. The worker builds this from its configuration and the task; the
 * agent loop only adds its own cancel signal, and knows nothing of how any of it was made.
 */
import { MAX_WORKDIR_ENTRIES, WorkdirDisk } from './disk-quota.js';
import type { ProcessIsolation } from './process-isolation.js';
import type { Scratchpad, ToolContext } from './tool.js';

/** Everything a tool call gets but the run's signal, which the loop owns. */
export type ToolSettings = Omit<ToolContext, 'signal'>;

export function createToolSettings(options: {
  /** The task's work directory: tools run there and cannot leave it. */
  workdir: string;
  /** How bash, python and node run: in the jail, without one (an explicit opt-out), or refused. */
  isolation: ProcessIsolation;
  /** Per tool run. Default 60000 ms. */
  timeoutMs?: number;
  /** Characters of tool output kept for the model. Default 20000. */
  outputLimit?: number;
  /** Makes the work directory before the first tool runs, once while it succeeds. Default: it is there already. */
  prepareWorkdir?: () => Promise<void>;
  /** The work directory's quota, made by the caller (which then reads what the run left); or `diskQuotaBytes`. */
  disk?: WorkdirDisk | undefined;
  /** What the work directory may hold on disk (bytes). Default: no quota. */
  diskQuotaBytes?: number;
  /** The shared memory of the task's subtasks, for the memory tools. Default none. */
  scratchpad?: Scratchpad;
  /** Let `http_fetch` reach loopback and private-network addresses. Default false. */
  allowPrivateNetwork?: boolean;
  /** The services agentq uses (Redis) at public addresses: `http_fetch` refuses them. Default none. */
  serviceAddresses?: readonly string[];
}): ToolSettings {
  const disk =
    options.disk ??
    (options.diskQuotaBytes
      ? new WorkdirDisk(options.workdir, { bytes: options.diskQuotaBytes, entries: MAX_WORKDIR_ENTRIES })
      : undefined);
  return {
    workdir: options.workdir,
    isolation: options.isolation,
    timeoutMs: options.timeoutMs ?? 60_000,
    outputLimit: options.outputLimit ?? 20_000,
    ...(options.prepareWorkdir ? { prepareWorkdir: once(options.prepareWorkdir) } : {}),
    ...(disk ? { disk } : {}),
    ...(options.scratchpad ? { scratchpad: options.scratchpad } : {}),
    ...(options.allowPrivateNetwork ? { allowPrivateNetwork: true } : {}),
    ...(options.serviceAddresses ? { serviceAddresses: options.serviceAddresses } : {}),
  };
}

/** `make` run at most once while it succeeds; a failure is tried again by the next caller. */
function once(make: () => Promise<void>): () => Promise<void> {
  let made: Promise<void> | undefined;
  return () =>
    (made ??= make().catch((error: unknown) => {
      made = undefined;
      throw error;
    }));
}
