/**
 * `agentq config init [DIR]`: a configuration folder to start from (the shipped file, the instruction
 * files it names, its JSON Schema and a .env.example) that `agentq config check` passes from any working
 * directory; a file already there is never overwritten. The real CLI, in temporary folders.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAgentq } from '../helpers/processes.js';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'agentq-config-init-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Runs the CLI to its end: its exit status and what it printed. */
async function agentq(args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  const run = spawnAgentq(args, {}, { cwd });
  const code = await run.exited;
  return { code, output: run.output() };
}

/** Every file under `folder`, relative, sorted. */
async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(folder, path.join(entry.parentPath, entry.name)))
    .sort();
}

describe('agentq config init', () => {
  it('writes a folder that config check passes, from any working directory', async () => {
    const elsewhere = await mkdtemp(path.join(root, 'cwd-'));
    const folder = path.join(root, 'new', 'agentq');
    const init = await agentq(['config', 'init', folder], elsewhere);
    console.log(`config init: exit ${init.code}\n${init.output}`);
    expect(init.code).toBe(0);
    expect(await filesUnder(folder)).toEqual([
      '.env.example',
      'agentq.config.schema.json',
      'agentq.config.yaml',
      'prompts/casual.md',
      'prompts/coder.md',
      'prompts/file.md',
      'prompts/web.md',
    ]);
    // The working directory got nothing.
    expect(await readdir(elsewhere)).toEqual([]);
    for (const [args, cwd] of [
      [['config', 'check', path.join(folder, 'agentq.config.yaml')], '/'],
      [['config', 'check', path.join(folder, 'agentq.config.yaml')], elsewhere],
      [['config', 'check'], folder],
    ] as const) {
      const check = await agentq([...args], cwd);
      console.log(`${args.join(' ')} (in ${cwd}): exit ${check.code}; ${check.output.trim().split('\n').at(-1)}`);
      expect(check.code, check.output).toBe(0);
      expect(check.output).toContain(`ok: ${path.join(folder, 'agentq.config.yaml')}`);
    }
    // Its instruction files are the folder's own, wherever the check runs.
    await rm(path.join(folder, 'prompts/web.md'));
    const missing = await agentq(['config', 'check', path.join(folder, 'agentq.config.yaml')], '/');
    expect(missing.code).toBe(2);
    expect(missing.output).toContain(
      `agents.web.instructions.file: cannot read ${path.join(folder, 'prompts/web.md')}`,
    );
  });

  it('writes into the working directory without DIR', async () => {
    const folder = await mkdtemp(path.join(root, 'here-'));
    const init = await agentq(['config', 'init'], folder);
    expect(init.code, init.output).toBe(0);
    expect(existsSync(path.join(folder, 'agentq.config.yaml'))).toBe(true);
    expect((await agentq(['config', 'check'], folder)).code).toBe(0);
  });

  it('refuses to overwrite a file, naming each one there, and writes nothing', async () => {
    const folder = await mkdtemp(path.join(root, 'taken-'));
    await mkdir(path.join(folder, 'prompts'));
    await writeFile(path.join(folder, 'agentq.config.yaml'), '# mine\n');
    await writeFile(path.join(folder, 'prompts/coder.md'), 'my coder\n');
    const init = await agentq(['config', 'init', folder], root);
    console.log(`config init over files: exit ${init.code}\n${init.output}`);
    expect(init.code).toBe(1);
    expect(init.output).toContain(path.join(folder, 'agentq.config.yaml'));
    expect(init.output).toContain(path.join(folder, 'prompts/coder.md'));
    expect(readFileSync(path.join(folder, 'agentq.config.yaml'), 'utf8')).toBe('# mine\n');
    expect(readFileSync(path.join(folder, 'prompts/coder.md'), 'utf8')).toBe('my coder\n');
    expect(await filesUnder(folder)).toEqual(['agentq.config.yaml', 'prompts/coder.md']);
  });
});
