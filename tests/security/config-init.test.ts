/**
 * `agentq config init DIR` run by an operator in a folder someone else could write first (a shared
 * /tmp, a checkout): links planted where its files and folders go would send its writes elsewhere. The
 * real CLI refuses, naming each link, and writes nothing anywhere: not through a link to a folder, not
 * through a dangling link (which an existence check does not see), not over a link to a file.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { spawnAgentq } from '../helpers/processes.js';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'agentq-config-init-attack-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

it('refuses a folder with links planted where its files go, and writes nothing through them', async () => {
  const folder = path.join(root, 'shared');
  const victim = path.join(root, 'victim');
  await mkdir(folder);
  await mkdir(victim);
  await writeFile(path.join(victim, 'bashrc'), 'the victim’s own\n');
  // prompts/ is a link to another folder; .env.example a dangling link; the schema a link to a file.
  await symlink(victim, path.join(folder, 'prompts'));
  await symlink(path.join(victim, 'planted-env'), path.join(folder, '.env.example'));
  await symlink(path.join(victim, 'bashrc'), path.join(folder, 'agentq.config.schema.json'));
  const init = spawnAgentq(['config', 'init', folder], {}, { cwd: root });
  const code = await init.exited;
  console.log(`config init over planted links: exit ${code}\n${init.output()}`);
  expect(code).toBe(1);
  for (const name of ['prompts', '.env.example', 'agentq.config.schema.json'])
    expect(init.output()).toContain(`${path.join(folder, name)} (a link)`);
  // Nothing reached the victim's folder, nothing was made in the shared one.
  expect((await readdir(victim)).sort()).toEqual(['bashrc']);
  expect(readFileSync(path.join(victim, 'bashrc'), 'utf8')).toBe('the victim’s own\n');
  expect(existsSync(path.join(victim, 'planted-env'))).toBe(false);
  expect((await readdir(folder)).sort()).toEqual(['.env.example', 'agentq.config.schema.json', 'prompts']);
});
