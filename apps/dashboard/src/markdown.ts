/**
 * Markdown that a model wrote, shown as Markdown (headings, lists, tables, code blocks, emphasis,
 * links) and never as HTML: marked's lexer reads it into tokens, and each token becomes elements built
 * here with text nodes only. Raw HTML in the text (`<script>`, `<img onerror>`) is shown as the
 * characters it is; links go only to http(s) and mailto, and open apart (no referrer); images are
 * shown as links, not loaded (a model's image URL could track whoever opens the page).
 */
import { Lexer, type Token, type Tokens } from 'marked';
import { h } from './dom.js';

/** Markdown as a `<div class="markdown">`. Text longer than this is shown as plain text (lexing is not free). */
const MAX_MARKDOWN = 200_000;

export function markdown(text: string): HTMLElement {
  if (text.length > MAX_MARKDOWN) return h('div', { class: 'markdown' }, h('pre', {}, text));
  const root = h('div', { class: 'markdown' });
  // A single newline is a line break, as in chat answers: a model's lines (a command's output, an address)
  // keep their shape instead of running into one paragraph.
  appendTokens(root, Lexer.lex(text, { gfm: true, breaks: true }));
  return root;
}

function appendTokens(parent: Node, tokens: readonly Token[]): void {
  for (const token of tokens) {
    const node = render(token as Tokens.Generic);
    if (node) parent.appendChild(node);
  }
}

function inline(
  tag: 'strong' | 'em' | 'del' | 'p' | 'span',
  tokens: readonly Token[] | undefined,
  text: string,
): HTMLElement {
  const element = h(tag);
  if (tokens?.length) appendTokens(element, tokens);
  else element.append(decode(text));
  return element;
}

function render(token: Tokens.Generic): Node | undefined {
  switch (token.type) {
    case 'space':
    case 'def':
      return undefined;
    case 'paragraph':
      return inline('p', token.tokens, token.text as string);
    case 'heading':
      return headingOf(token as Tokens.Heading);
    case 'code':
      return h(
        'pre',
        { class: 'code', ...(token.lang ? { 'data-lang': String(token.lang) } : {}) },
        h('code', {}, token.text as string),
      );
    case 'blockquote': {
      const quote = h('blockquote');
      appendTokens(quote, token.tokens ?? []);
      return quote;
    }
    case 'list': {
      const list = token as Tokens.List;
      const element = list.ordered
        ? h('ol', typeof list.start === 'number' && list.start !== 1 ? { start: list.start } : {})
        : h('ul');
      for (const item of list.items) {
        const li = h('li');
        if (item.task) li.append(h('input', { type: 'checkbox', disabled: true, checked: Boolean(item.checked) }), ' ');
        appendTokens(li, item.tokens);
        element.append(li);
      }
      return element;
    }
    case 'table': {
      const table = token as Tokens.Table;
      const cell = (tag: 'th' | 'td', value: Tokens.TableCell) => {
        // A class, not a style attribute: the page's policy allows no inline style.
        const element = h(tag, value.align ? { class: `align-${value.align}` } : {});
        appendTokens(element, value.tokens);
        return element;
      };
      return h(
        'div',
        { class: 'table-scroll' },
        h(
          'table',
          {},
          h('thead', {}, h('tr', {}, ...table.header.map((value) => cell('th', value)))),
          h('tbody', {}, ...table.rows.map((row) => h('tr', {}, ...row.map((value) => cell('td', value))))),
        ),
      );
    }
    case 'hr':
      return h('hr');
    case 'text':
      return token.tokens?.length
        ? inline('span', token.tokens, token.text as string)
        : document.createTextNode(decode(token.text as string));
    case 'escape':
      return document.createTextNode(token.text as string);
    case 'strong':
    case 'em':
    case 'del':
      return inline(token.type, token.tokens, token.text as string);
    case 'codespan':
      return h('code', {}, decode(token.text as string));
    case 'br':
      return h('br');
    case 'link':
      return link(token.href as string, token.tokens, token.text as string);
    case 'image':
      return link(token.href as string, undefined, `image: ${(token.text as string) || (token.href as string)}`);
    default:
      // Raw HTML, and anything unknown: the characters as written.
      return document.createTextNode(token.raw);
  }
}

function headingOf(token: Tokens.Heading): HTMLElement {
  // The page has its own h1 and h2: a model's headings start at h3.
  const tag = (['h3', 'h3', 'h3', 'h4', 'h5', 'h6'] as const)[Math.min(5, Math.max(0, token.depth - 1))]!;
  const element = h(tag);
  appendTokens(element, token.tokens);
  return element;
}

/** A link that can only go to a web page or a mail address; anything else is its text. */
function link(href: string, tokens: readonly Token[] | undefined, text: string): Node {
  let url: URL | undefined;
  try {
    url = new URL(href);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:', 'mailto:'].includes(url.protocol)) return inline('span', tokens, text);
  const anchor = h('a', { href: url.href, target: '_blank', rel: 'noopener noreferrer nofollow' });
  if (tokens?.length) appendTokens(anchor, tokens);
  else anchor.append(text);
  return anchor;
}

/** The character references a lexer leaves in text (`&amp;`, `&#39;`), as the characters they stand for. */
function decode(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|apos|nbsp|#\d{1,7}|#x[\da-f]{1,6});/gi, (whole, name: string) => {
    const lower = name.toLowerCase();
    if (lower.startsWith('#x')) return safeCodePoint(parseInt(lower.slice(2), 16)) ?? whole;
    if (lower.startsWith('#')) return safeCodePoint(Number(lower.slice(1))) ?? whole;
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' }[lower] ?? whole;
  });
}

function safeCodePoint(code: number): string | undefined {
  return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : undefined;
}
