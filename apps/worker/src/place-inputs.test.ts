import { UnrecoverableError } from 'bullmq';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { placeInputs, placingFolderOf } from './place-inputs.js';

let work: string;
let workdir: string;
const file = (name: string, content: string) => ({ path: name, content: Buffer.from(content) });

beforeEach(() => {
  work = mkdtempSync(path.join(tmpdir(), 'place-inputs-'));
  workdir = path.join(work, 'task-1');
});

afterEach(() => rmSync(work, { recursive: true, force: true }));

describe('placeInputs', () => {
  it('makes the folder with every file in it, and leaves nothing beside it', async () => {
    const files = [file('a.txt', 'a'), file('data/b.csv', 'b,c'), file('é'.repeat(127), 'long name')];
    expect(await placeInputs({ files, given: 3, workdir, mode: 0o700 })).toBe(3);
    expect(readFileSync(path.join(workdir, 'data/b.csv'), 'utf8')).toBe('b,c');
    expect(readFileSync(path.join(workdir, 'é'.repeat(127)), 'utf8')).toBe('long name');
    expect(statSync(workdir).mode & 0o777).toBe(0o700);
    expect(existsSync(placingFolderOf(workdir))).toBe(false);
  });

  it('places every file again after an attempt cut short between two (a worker killed mid-placement)', async () => {
    // What a killed worker left: its staging folder with the first file only, and no task folder.
    const left = path.join(placingFolderOf(workdir), 'killed-run');
    mkdirSync(left, { recursive: true });
    writeFileSync(path.join(left, 'a.txt'), 'a');
    expect(existsSync(workdir)).toBe(false);
    await placeInputs({ files: [file('a.txt', 'a'), file('b.txt', 'b'), file('c.txt', 'c')], given: 3, workdir });
    expect(readdirSync(workdir).sort()).toEqual(['a.txt', 'b.txt', 'c.txt']);
    expect(existsSync(placingFolderOf(workdir))).toBe(false);
  });

  it('fails naming the file it cannot place, makes no folder, and fails for good when every attempt would', async () => {
    // A name no disk takes (the submit refuses it; a file stored before that check was added may have it).
    const failure = placeInputs({ files: [file('a.txt', 'a'), file('b'.repeat(256), 'b')], given: 2, workdir });
    await expect(failure).rejects.toThrow(
      /^The input file "b{256}" could not be placed in the task's folder \(ENAMETOOLONG: name too long\); the task does not run without it\. Submit it under another path\.$/,
    );
    await expect(failure).rejects.toBeInstanceOf(UnrecoverableError);
    expect(existsSync(workdir)).toBe(false);
    expect(existsSync(placingFolderOf(workdir))).toBe(false);
  });

  it('refuses to make the folder with fewer files than the task was given', async () => {
    await expect(placeInputs({ files: [file('a.txt', 'a')], given: 3, workdir })).rejects.toThrow(
      'The task was given 3 input files, but 1 are stored: it does not run without them.',
    );
    expect(existsSync(workdir)).toBe(false);
  });
});
