/**
 * Storage version 4: a task's packed events are a raw deflate stream left open, begun by its create
 * (its first event, as stored blocks), which the run that ends it writes again with its lines after
 * (commit.lua). Nothing is moved: a packed string an earlier version wrote (closed) reads the same, and
 * nothing follows it (no record of that version has the `packed` field that allows it). The version is raised so that an
 * earlier agentq, which reads only closed streams, refuses this data at its start instead of failing
 * on the events of every task created since.
 */
export async function openPackedEvents(): Promise<number> {
  return 0;
}
