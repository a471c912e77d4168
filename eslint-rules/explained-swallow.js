/**
 * A swallowed error (`.catch(() => undefined)`, `.on('error', () => {})`) is kept only where a comment
 * says why losing it is right: on the line above the statement, or on the lines of the statement itself.
 */

/** A handler that drops what it is given: `() => undefined`, `() => {}`, `() => void 0`, `() => null`. */
function dropsIt(node) {
  if (node?.type !== 'ArrowFunctionExpression' && node?.type !== 'FunctionExpression') return false;
  const body = node.body;
  if (body.type === 'BlockStatement') return body.body.length === 0;
  if (body.type === 'Identifier') return body.name === 'undefined';
  if (body.type === 'Literal') return body.value === null;
  return body.type === 'UnaryExpression' && body.operator === 'void' && body.argument.type === 'Literal';
}

function swallows(call) {
  const callee = call.callee;
  if (callee.type !== 'MemberExpression' || callee.property.type !== 'Identifier') return false;
  const method = callee.property.name;
  if (method === 'catch') return dropsIt(call.arguments[0]);
  if (method === 'then') return dropsIt(call.arguments[1]);
  if (method === 'on' || method === 'once') {
    const [event, handler] = call.arguments;
    return event?.type === 'Literal' && event.value === 'error' && dropsIt(handler);
  }
  return false;
}

/** The statement (or class member) the call is part of: where its explanation goes above. */
function statementOf(node) {
  let at = node;
  while (at.parent && !/(Statement|Declaration|PropertyDefinition)$/.test(at.type)) at = at.parent;
  return at;
}

export default {
  meta: {
    type: 'problem',
    docs: { description: 'A swallowed error needs a comment that says why losing it is right.' },
    schema: [],
    messages: {
      unexplained: 'This drops an error: handle it, or say in a comment (above the statement) why losing it is right.',
    },
  },
  create(context) {
    const comments = context.sourceCode.getAllComments();
    return {
      CallExpression(call) {
        if (!swallows(call)) return;
        const statement = statementOf(call);
        const from = statement.loc.start.line - 1;
        const to = call.loc.end.line;
        if (!comments.some((comment) => comment.loc.end.line >= from && comment.loc.start.line <= to))
          context.report({ node: call, messageId: 'unexplained' });
      },
    };
  },
};
