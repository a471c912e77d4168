/**
 * A name or key a client gives (a file's path, an idempotency key, a concurrency key) must be
 * well-formed Unicode. JSON may carry half of a UTF-16 surrogate pair (`"\ud800"`), which UTF-8 cannot
 * write: Redis (a key, a hash's field) and the disk store each as U+FFFD, the replacement character, so
 * `a\ud800` and `a\ud801` would be one file, one idempotency key, one concurrency key, while the checks
 * before them saw two. Text (a prompt, an answer) is stored whatever it holds (docs/DESIGN.md); a name
 * is refused.
 */

/** Half of a surrogate pair on its own (a `u` pattern reads a whole pair as one code point). */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * What is wrong with a name UTF-8 cannot store as given, as a message that says what to do; undefined
 * when it can.
 * @example loneSurrogateProblem('a\ud800') // 'holds a lone UTF-16 surrogate (\ud800, character 2), …'
 */
export function loneSurrogateProblem(value: string): string | undefined {
  const at = value.search(LONE_SURROGATE);
  if (at < 0) return undefined;
  return `holds a lone UTF-16 surrogate (\\u${value.charCodeAt(at).toString(16)}, character ${at + 1}), which UTF-8 stores as U+FFFD: two names that differ only there would be one. Send well-formed Unicode (both halves of a pair, or neither)`;
}
