/**
 * Separates a model's `<think>...</think>` reasoning from its answer. Reasoning is never run and never
 * stored in memory; it becomes a `reasoning` event. An unclosed `<think>` makes everything after it
 * reasoning (a model cut off mid-thought has not answered yet). Stray `</think>` without an opening tag
 * (some servers drop the opening one) ends the reasoning that precedes it.
 */

export interface SplitReasoning {
  answer: string;
  reasoning: string;
}

export function splitReasoning(text: string): SplitReasoning {
  const reasoning: string[] = [];
  let answer = '';
  let rest = text;
  // A closing tag with no opening before it: everything before it was reasoning.
  const firstOpen = rest.indexOf('<think>');
  const firstClose = rest.indexOf('</think>');
  if (firstClose !== -1 && (firstOpen === -1 || firstClose < firstOpen)) {
    reasoning.push(rest.slice(0, firstClose));
    rest = rest.slice(firstClose + '</think>'.length);
  }
  for (;;) {
    const open = rest.indexOf('<think>');
    if (open === -1) {
      answer += rest;
      break;
    }
    answer += rest.slice(0, open);
    const close = rest.indexOf('</think>', open);
    if (close === -1) {
      reasoning.push(rest.slice(open + '<think>'.length));
      break;
    }
    reasoning.push(rest.slice(open + '<think>'.length, close));
    rest = rest.slice(close + '</think>'.length);
  }
  return {
    answer: answer.trim(),
    reasoning: reasoning
      .map((part) => part.trim())
      .filter(Boolean)
      .join('\n\n'),
  };
}
