/**
 * Every way of creating or changing a task passes the one admission gate as a method of TaskService
 * (docs/ARCHITECTURE.md, "Where a change goes"). An action exported beside it (submitTasks, retryTask...)
 * is a side door round the gate for whoever imports it; and a name exported that nothing outside the
 * package imports is a door nobody needed. The package exports what others import, and no action.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import * as tasksPackage from '@agentq/tasks';
import { answerTask } from '../../packages/tasks/src/answer-task.js';
import { cancelTask } from '../../packages/tasks/src/cancel-task.js';
import { decideApproval } from '../../packages/tasks/src/decide-approval.js';
import { forkTask } from '../../packages/tasks/src/fork-task.js';
import { retryTask } from '../../packages/tasks/src/retry-task.js';
import { submitTasks } from '../../packages/tasks/src/submit-tasks.js';

const root = path.resolve(import.meta.dirname, '../..');

/** Each action, and the method of TaskService that runs it through the gate. */
const ACTIONS: Array<[string, unknown, keyof tasksPackage.TaskService]> = [
  ['submitTasks', submitTasks, 'submit'],
  ['retryTask', retryTask, 'retry'],
  ['forkTask', forkTask, 'fork'],
  ['cancelTask', cancelTask, 'cancel'],
  ['answerTask', answerTask, 'answer'],
  ['decideApproval', decideApproval, 'decide'],
];

it('exports no action but as a method of TaskService', () => {
  const exported = new Set<unknown>(Object.values(tasksPackage));
  const doors = ACTIONS.filter(([, action]) => exported.has(action)).map(([name]) => name);
  expect(doors).toEqual([]);
  for (const [, , method] of ACTIONS) expect(typeof tasksPackage.TaskService.prototype[method]).toBe('function');
});

/** Every name imported from @agentq/tasks by a file outside the package (apps, other packages, tests, benches). */
function importedNames(): Set<string> {
  const files = ['apps', 'packages', 'tests', 'bench'].flatMap((folder) =>
    readdirSync(path.join(root, folder), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && /\.(ts|mjs)$/.test(entry.name))
      .map((entry) => path.join(entry.parentPath, entry.name))
      .filter(
        (file) =>
          !/[\\/](node_modules|dist)[\\/]/.test(file) &&
          !file.includes(`${path.sep}packages${path.sep}tasks${path.sep}`),
      ),
  );
  const names = new Set<string>();
  for (const file of files)
    for (const [, list] of readFileSync(file, 'utf8').matchAll(
      /import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'@agentq\/tasks'/g,
    ))
      for (const name of list!.split(','))
        if (name.trim())
          names.add(
            name
              .trim()
              .replace(/^type\s+/, '')
              .split(/\s+as\s+/)[0]!,
          );
  return names;
}

/** Every name the package's index exports, values and types. */
function exportedNames(): string[] {
  const index = readFileSync(path.join(root, 'packages/tasks/src/index.ts'), 'utf8');
  return [...index.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)].flatMap(([, list]) =>
    list!
      .split(',')
      .map((name) => name.trim().replace(/^type\s+/, ''))
      .filter(Boolean),
  );
}

it('exports only what something outside the package imports', () => {
  const imported = importedNames();
  // The scan sees the imports it must: the API's and the worker's.
  expect([...imported]).toEqual(expect.arrayContaining(['TaskService', 'Transitions', 'startPlan']));
  expect(exportedNames().filter((name) => !imported.has(name))).toEqual([]);
});
