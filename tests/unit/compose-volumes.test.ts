/**
 * docker-compose.yml gives every agentq service the one work volume, at the same path: a task's files
 * live in its folder there, and a worker that resumes, answers or forks it, the worker that sweeps it
 * and the API's files routes all read that folder (docs/operations.md, "Scaling out").
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse } from 'yaml';

const root = path.resolve(import.meta.dirname, '../..');

interface Service {
  command?: string[];
  volumes?: string[];
  environment?: Record<string, string>;
  user?: string;
  cap_drop?: string[];
  cap_add?: string[];
}

const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
/** The services that run agentq: the API and the workers. */
const agentq = Object.entries(compose.services).filter(([, service]) =>
  ['api', 'worker'].includes(service.command?.[0] ?? ''),
);
const WORK_VOLUME = 'work-data';

/** Where `service` mounts the work volume, and how (`ro` or `rw`), or undefined. */
function workMount(service: Service): { target: string; mode: string } | undefined {
  for (const volume of service.volumes ?? []) {
    const [source, target = '', mode = 'rw'] = volume.split(':');
    if (source === WORK_VOLUME) return { target, mode };
  }
  return undefined;
}

it('mounts the work volume in the API and every worker, at their AGENTQ_DATA_DIR', () => {
  expect(Object.keys(compose.volumes)).toContain(WORK_VOLUME);
  expect(agentq.map(([name]) => name).sort()).toEqual(['agents', 'api', 'planner']);
  for (const [name, service] of agentq) {
    const dataDir = service.environment?.AGENTQ_DATA_DIR;
    expect({ name, mount: workMount(service)?.target }).toEqual({ name, mount: dataDir });
  }
  expect(new Set(agentq.map(([, service]) => workMount(service)?.target)).size).toBe(1);
});

it("gives the API the volume read-only, and only the capability to read the tasks' folders", () => {
  const api = compose.services.api!;
  expect(workMount(api)?.mode).toBe('ro');
  expect(api.cap_drop).toEqual(['ALL']);
  expect(api.cap_add).toEqual(['DAC_READ_SEARCH']);
  for (const [, worker] of agentq.filter(([name]) => name !== 'api')) expect(workMount(worker)?.mode).toBe('rw');
});
