/**
 * Finds the runnable code fences in a model's answer (AgenticSeek's protocol, with its edge cases
 * fixed):
 * - a fence opens on a line that starts, after indentation, with ``` or ~~~ (three or more) and closes
 *   on a line of the same character, at least as long, with nothing after it, so a longer outer fence
 *   may contain shorter ones;
 * - the tag is the info string's first word, matched exactly and case-insensitively against the
 *   tools' tags and aliases; fences with other tags are prose and never run;
 * - `python:hello.py` saves the block as hello.py; the path comes only from the fence line, and each
 *   block keeps its own;
 * - the code is de-indented by the opening fence's own indentation (blocks nested in lists run);
 * - a fence that is never closed is reported, never run.
 */

export interface FenceBlock {
  /** The tag as the model wrote it, lower-cased (`py`, `python3`, ...). */
  tag: string;
  /** The tool the tag belongs to. */
  toolName: string;
  /** Where to save the block, from `tag:path` on the fence line. */
  savePath?: string;
  code: string;
  /** 1-based line of the opening fence. */
  line: number;
}

export interface UnclosedFence {
  tag: string;
  line: number;
}

export interface ParsedFences {
  blocks: FenceBlock[];
  /** Runnable fences that were opened and never closed. */
  unclosed: UnclosedFence[];
}

/** @param tags maps every accepted tag (lower case) to its tool name, e.g. `{ py: 'python' }`. */
export function parseFences(text: string, tags: ReadonlyMap<string, string>): ParsedFences {
  const lines = text.split('\n');
  const blocks: FenceBlock[] = [];
  const unclosed: UnclosedFence[] = [];
  let index = 0;
  while (index < lines.length) {
    const open = matchOpening(lines[index]!);
    if (!open) {
      index++;
      continue;
    }
    const closeIndex = findClosing(lines, index + 1, open.marker);
    const { tag, savePath } = readInfo(open.info);
    const toolName = tags.get(tag);
    if (closeIndex === -1) {
      if (toolName) unclosed.push({ tag, line: index + 1 });
      break;
    }
    if (toolName) {
      const body = lines.slice(index + 1, closeIndex).map((line) => dedent(line, open.indent.length));
      blocks.push({ tag, toolName, ...(savePath ? { savePath } : {}), code: body.join('\n'), line: index + 1 });
    }
    index = closeIndex + 1;
  }
  return { blocks, unclosed };
}

interface Opening {
  indent: string;
  marker: string;
  info: string;
}

function matchOpening(line: string): Opening | undefined {
  const match = /^([ \t]*)(`{3,}|~{3,})(.*)$/.exec(line);
  if (!match) return undefined;
  const [, indent, marker, info] = match as unknown as [string, string, string, string];
  // A backtick fence's info string may not contain backticks (CommonMark).
  if (marker.startsWith('`') && info.includes('`')) return undefined;
  return { indent, marker, info: info.trim() };
}

/** Removes up to `width` characters of leading white space (CommonMark's rule for indented fences). */
function dedent(line: string, width: number): string {
  let cut = 0;
  while (cut < width && (line[cut] === ' ' || line[cut] === '\t')) cut++;
  return line.slice(cut);
}

function findClosing(lines: readonly string[], from: number, marker: string): number {
  const char = marker[0]!;
  for (let index = from; index < lines.length; index++) {
    const trimmed = lines[index]!.trim();
    if (trimmed.length >= marker.length && [...trimmed].every((c) => c === char)) return index;
  }
  return -1;
}

function readInfo(info: string): { tag: string; savePath?: string } {
  const firstWord = info.split(/\s+/)[0] ?? '';
  const colon = firstWord.indexOf(':');
  if (colon === -1) return { tag: firstWord.toLowerCase() };
  const savePath = firstWord.slice(colon + 1).trim();
  return { tag: firstWord.slice(0, colon).toLowerCase(), ...(savePath ? { savePath } : {}) };
}
