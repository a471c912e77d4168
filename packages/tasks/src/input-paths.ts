/**
 * What a path of a file given on submit may be, checked as the worker's disk will see it: in UTF-8
 * bytes, not characters (128 "é" are 128 characters and 256 bytes, one past what a file name may hold),
 * well-formed (UTF-8 has no lone surrogate: two names would be one), and as one name whatever its
 * Unicode form. A name the submit lets through must never fail the placement: the task would lose the
 * file.
 */
import { loneSurrogateProblem } from './well-formed-names.js';

/** A file or folder name's most bytes (Linux's NAME_MAX). */
export const INPUT_NAME_MAX_BYTES = 255;
/** A whole path's most bytes: room is left for the task's folder in front of it (PATH_MAX is 4,096). */
export const INPUT_PATH_MAX_BYTES = 1024;

/** A path as a message shows it: quoted, escapes visible, cut past 300 characters. */
export function shownPath(value: string): string {
  return JSON.stringify(value.length > 300 ? `${value.slice(0, 300)}…` : value);
}

/**
 * What is wrong with a path given on submit, as a message that names it and says what to do; undefined
 * when it is a path the worker can place.
 * @example inputPathProblem('é'.repeat(128)) // '"éé…é" is 256 bytes in UTF-8: a file or folder name may be at most 255 bytes …'
 */
export function inputPathProblem(value: string): string | undefined {
  if (value === '') return 'must name a file';
  if (value.includes('\0')) return `${shownPath(value)} holds a NUL character, which no file name may: remove it`;
  const lone = loneSurrogateProblem(value);
  if (lone) return `${shownPath(value)} ${lone}`;
  const parts = value.split('/');
  if (value.startsWith('/') || parts.some((part) => part === '' || part === '.' || part === '..'))
    return `${shownPath(value)} must be a relative path inside the task's folder ("data/in.csv"): no leading "/", no "." or ".." and no empty part`;
  const bytes = Buffer.byteLength(value);
  if (bytes > INPUT_PATH_MAX_BYTES)
    return `${shownPath(value)} is ${bytes} bytes in UTF-8: a path may be at most ${INPUT_PATH_MAX_BYTES} bytes; give it a shorter path`;
  const long = parts.find((part) => Buffer.byteLength(part) > INPUT_NAME_MAX_BYTES);
  if (long !== undefined)
    return `${shownPath(long)}${long === value ? '' : ` (in ${shownPath(value)})`} is ${Buffer.byteLength(long)} bytes in UTF-8: a file or folder name may be at most ${INPUT_NAME_MAX_BYTES} bytes (not characters); give it a shorter name`;
  return undefined;
}

/** The one name a path is, whatever its Unicode form ("é" as one code point or as "e" and an accent). */
export function inputName(value: string): string {
  return value.normalize('NFC');
}
