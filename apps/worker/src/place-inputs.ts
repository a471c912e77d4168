/**
 * The files a task was given on submit, written into its folder when the folder is made (a subtask gets
 * its root's): each through the file tools' own checks (openInWorkdir: a path stays inside, whatever
 * is there), owned by the user its jailed tools run as.
 */
import { inputFiles, type TaskRecord, type TaskStore } from '@agentq/store';
import { closeSync } from 'node:fs';
import { openInWorkdir, replaceContent, type HostIdentity } from '@agentq/tools';

export async function placeInputs(options: {
  store: TaskStore;
  record: Pick<TaskRecord, 'rootId' | 'inputs'>;
  workdir: string;
  owner?: HostIdentity | undefined;
}): Promise<number> {
  if (!options.record.inputs) return 0;
  const files = await inputFiles(options.store, options.record.rootId);
  for (const input of files) {
    const file = await openInWorkdir({
      workdir: options.workdir,
      path: input.path,
      access: 'write',
      ...(options.owner ? { owner: options.owner } : {}),
    });
    try {
      await replaceContent(file, input.content);
    } finally {
      closeSync(file);
    }
  }
  return files.length;
}
