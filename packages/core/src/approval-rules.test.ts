import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BUILTIN_TOOLS, type ApprovalRule } from '@agentq/contract';
import { builtinTools } from '@agentq/tools';
import { approvalRuleFor, approvalRuleForRedirect } from './approval-rules.js';
import type { PlannedCall } from './tool-protocol.js';

const call = (name: string, args: unknown, more: Partial<PlannedCall> = {}): PlannedCall => ({
  id: 'c1',
  name,
  arguments: typeof args === 'string' ? args : JSON.stringify(args),
  ...more,
});

const workdir = mkdtempSync(path.join(tmpdir(), 'agentq-rules-'));
afterAll(() => rmSync(workdir, { recursive: true, force: true }));

const rules: ApprovalRule[] = [
  { tool: 'bash' },
  { tool: 'http_fetch', unlessHosts: ['api.github.com', '*.example.com'] },
  { tool: 'write_file', argument: 'path', matches: '^deploy/' },
  { tool: 'read_file', argument: 'path', matches: '^(?!tmp/)' },
  { tool: 'edit_file', argument: 'path', matches: '^déploiement/' },
  { tool: 'github_*' },
  // An MCP server's tool: it declares no path arguments, its server resolves them as it likes.
  { tool: 'fs_write', argument: 'path', matches: '^deploy/' },
];
const check = { rules, workdir, tools: builtinTools(BUILTIN_TOOLS) };
const ruleOf = (planned: PlannedCall) => approvalRuleFor({ ...check, call: planned });
const writeOf = (target: string) => ruleOf(call('write_file', { path: target, content: 'x' }));

describe('approval rules', () => {
  it('names every call of a tool listed alone, and those of a prefix', () => {
    expect(ruleOf(call('bash', { command: 'ls' }))).toBe('every bash call');
    expect(ruleOf(call('github_merge', {}))).toBe('every github_merge call');
    expect(ruleOf(call('list_files', { path: 'x' }))).toBeUndefined();
  });

  it('lets through a URL to a listed host or subdomain, and holds any other, however it is written', () => {
    const fetchOf = (url: unknown) => ruleOf(call('http_fetch', { url }));
    expect(fetchOf('https://api.github.com/repos')).toBeUndefined();
    expect(fetchOf('https://API.GitHub.com./x')).toBeUndefined();
    expect(fetchOf('https://docs.example.com/')).toBeUndefined();
    // The host fetch would reach, not the one the text starts with.
    expect(fetchOf('https://api.github.com@evil.test/')).toMatch(/to evil\.test, not one of/);
    expect(fetchOf('https://api.github.com.evil.test/')).toMatch(/not one of/);
    expect(fetchOf('https://example.com/')).toMatch(/not one of/);
    expect(fetchOf('not a url')).toBe('http_fetch with a url that is not a URL');
    expect(fetchOf(42)).toBe('http_fetch with a url that is not a URL');
  });

  it('reads a redirect as a call of its own to where it goes', () => {
    const fetch = call('http_fetch', { url: 'https://api.github.com/x' });
    const redirect = (url: string) => approvalRuleForRedirect({ ...check, call: fetch, url });
    expect(redirect('https://api.github.com/y')).toBeUndefined();
    expect(redirect('https://evil.test/?token=1')).toMatch(/to evil\.test, not one of/);
  });

  it('holds calls whose argument matches, as text', () => {
    expect(writeOf('deploy/app.yaml')).toBe('write_file with path matching /^deploy//');
    expect(writeOf('src/deploy/app.yaml')).toBeUndefined();
  });

  it('reads a path as the file tools will open it, however it is spelt', () => {
    expect(writeOf('./deploy/a')).toBe('write_file with path matching /^deploy// (deploy/a)');
    expect(writeOf('x/../deploy/b')).toMatch(/\(deploy\/b\)$/);
    expect(writeOf('deploy//c')).toMatch(/\(deploy\/c\)$/);
    expect(writeOf(path.join(workdir, 'deploy/d'))).toMatch(/\(deploy\/d\)$/);
    // A filesystem that ignores case writes Deploy/ into deploy/: held too.
    expect(writeOf('DEPLOY/e')).toBe('write_file with path matching /^deploy//');
    // Outside the work directory: the file tool refuses it, nothing to approve.
    expect(writeOf('../deploy/f')).toBeUndefined();
    // The folder itself, with its final slash.
    mkdirSync(path.join(workdir, 'deploy'), { recursive: true });
    expect(writeOf('deploy')).toMatch(/matching/);
    expect(writeOf('notes/deploy')).toBeUndefined();
  });

  it('follows links inside the work directory to what they name', () => {
    mkdirSync(path.join(workdir, 'deploy'), { recursive: true });
    symlinkSync('deploy', path.join(workdir, 'innocent'));
    expect(writeOf('innocent/app.yaml')).toBe('write_file with path matching /^deploy// (deploy/app.yaml)');
  });

  it('holds a name in either Unicode form, and reads a negative pattern against every spelling', () => {
    const edit = (target: string) => ruleOf(call('edit_file', { path: target, old_text: 'a', new_text: 'b' }));
    expect(edit('déploiement/x'.normalize('NFC'))).toMatch(/matching/);
    expect(edit('déploiement/x'.normalize('NFD'))).toMatch(/matching/);
    expect(edit('deploiement/x')).toBeUndefined();
    // Everything outside tmp/ needs approval: ./tmp/x is in tmp/, TMP/x may not be.
    const read = (target: string) => ruleOf(call('read_file', { path: target }));
    expect(read('./tmp/x')).toBeUndefined();
    expect(read('tmp/../secret')).toMatch(/\(secret\)$/);
    expect(read('TMP/x')).toMatch(/matching/);
  });

  it("holds an MCP tool's path however it is spelt, though its server resolves it, not agentq", () => {
    const mcpWrite = (target: string) => ruleOf(call('fs_write', { path: target, content: 'x' }));
    mkdirSync(path.join(workdir, 'deploy'), { recursive: true });
    symlinkSync('deploy', path.join(workdir, 'shortcut'));
    expect(mcpWrite('deploy/a')).toBe('fs_write with path matching /^deploy//');
    // These match as written.
    expect(mcpWrite('deploy//b')).toBe('fs_write with path matching /^deploy//');
    expect(mcpWrite('deploy/./d')).toBe('fs_write with path matching /^deploy//');
    for (const [spelling, as] of [
      ['./deploy/a', 'deploy/a'],
      ['x/../deploy/c', 'deploy/c'],
      // Joined to its folder, a rooted path is in it; resolved, an absolute one inside is too.
      ['/deploy/e', 'deploy/e'],
      [path.join(workdir, 'deploy/f'), 'deploy/f'],
      // Up and back in: the file tools refuse it, a server need not.
      [`../${path.basename(workdir)}/deploy/g`, 'deploy/g'],
      // Through a link inside the work directory.
      ['shortcut/h', 'deploy/h'],
    ])
      expect(mcpWrite(spelling!), spelling).toBe(`fs_write with path matching /^deploy// (${as})`);
    expect(mcpWrite('Deploy/i')).toBe('fs_write with path matching /^deploy//');
    expect(mcpWrite('déploiement/../deploy/j'.normalize('NFD'))).toMatch(/\(deploy\/j\)$/);
    expect(mcpWrite('deploy')).toBe('fs_write with path matching /^deploy// (deploy/)');
    expect(mcpWrite('notes/deploy/x')).toBeUndefined();
    expect(mcpWrite('notes/x')).toBeUndefined();
    // Longer than a system opens, but a server may resolve it to a short path before it opens it.
    expect(mcpWrite(`x/${'../'.repeat(1400)}${workdir.slice(1)}/deploy/k`)).toMatch(/\(deploy\/k\)$/);
    expect(mcpWrite(`notes/${'a/'.repeat(100_000)}x`)).toBeUndefined();
  });

  it("holds a fence block that saves a file as a write_file of it, and runs it under its own tool's rules", () => {
    const block = (savePath: string) =>
      ruleOf(call('python', { code: 'print(1)' }, { savePath, saveContent: 'print(1)' }));
    expect(block('./deploy/evil.py')).toBe(
      'python saving its block as ./deploy/evil.py, a write_file with path matching /^deploy// (deploy/evil.py)',
    );
    expect(block('scratch/ok.py')).toBeUndefined();
    expect(ruleOf(call('bash', { command: 'ls' }, { savePath: 'x.sh' }))).toBe('every bash call');
  });

  it('holds nothing that will not run anyway: a mistake, a call past the cap, arguments that are not JSON', () => {
    expect(ruleOf(call('bash', {}, { error: 'bad' }))).toBeUndefined();
    expect(ruleOf(call('bash', {}, { notRun: 'past the cap' }))).toBeUndefined();
    expect(ruleOf(call('http_fetch', '{"url":'))).toBeUndefined();
    // A tool named alone needs no arguments read.
    expect(ruleOf(call('bash', '{"command":'))).toBe('every bash call');
  });
});
