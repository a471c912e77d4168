import { describe, expect, it } from 'vitest';
import type { ApprovalRule } from '@agentq/contract';
import { approvalRuleFor } from './approval-rules.js';

const call = (name: string, args: unknown, more: object = {}) => ({
  id: 'c1',
  name,
  arguments: typeof args === 'string' ? args : JSON.stringify(args),
  ...more,
});

describe('approval rules', () => {
  const rules: ApprovalRule[] = [
    { tool: 'bash' },
    { tool: 'http_fetch', unlessHosts: ['api.github.com', '*.example.com'] },
    { tool: 'write_file', argument: 'path', matches: '^deploy/' },
    { tool: 'github_*' },
  ];

  it('names every call of a tool listed alone, and those of a prefix', () => {
    expect(approvalRuleFor(rules, call('bash', { command: 'ls' }))).toBe('every bash call');
    expect(approvalRuleFor(rules, call('github_merge', {}))).toBe('every github_merge call');
    expect(approvalRuleFor(rules, call('read_file', { path: 'x' }))).toBeUndefined();
  });

  it('lets through a URL to a listed host or subdomain, and holds any other, however it is written', () => {
    const fetchOf = (url: unknown) => approvalRuleFor(rules, call('http_fetch', { url }));
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

  it('holds calls whose argument matches, as text', () => {
    expect(approvalRuleFor(rules, call('write_file', { path: 'deploy/app.yaml' }))).toBe(
      'write_file with path matching /^deploy//',
    );
    expect(approvalRuleFor(rules, call('write_file', { path: 'src/deploy/app.yaml' }))).toBeUndefined();
  });

  it('holds nothing that will not run anyway: a mistake, a call past the cap, arguments that are not JSON', () => {
    expect(approvalRuleFor(rules, call('bash', {}, { error: 'bad' }))).toBeUndefined();
    expect(approvalRuleFor(rules, call('bash', {}, { notRun: 'past the cap' }))).toBeUndefined();
    expect(approvalRuleFor(rules, call('http_fetch', '{"url":'))).toBeUndefined();
    // A tool named alone needs no arguments read.
    expect(approvalRuleFor(rules, call('bash', '{"command":'))).toBe('every bash call');
  });
});
