/**
 * Code fences as the tool protocol, for small local models that write code better than JSON
 * (AgenticSeek's protocol). Blocks run in order and the first failure stops the rest; one `user`
 * message then reports every block: its output, its error, or that it did not run.
 */
import { parseFences, type Message } from '@agentq/protocol';
import { fenceTags } from '@agentq/tools';
import type { CallResult, PlannedCall, ToolProtocol } from './tool-protocol.js';

export const fenceProtocol: ToolProtocol = {
  name: 'fences',
  stopsAtFirstFailure: true,
  toolSpecs: () => [],
  plan(message, { step, tools }) {
    const text = message.content ?? '';
    const { blocks, unclosed } = parseFences(text, fenceTags(tools));
    if (unclosed.length) {
      const which = unclosed.map((fence) => `the \`\`\`${fence.tag} block at line ${fence.line}`).join(', ');
      return {
        kind: 'reply',
        text: `Nothing was run: ${which} was never closed. Close every code block with a line of three backticks (\`\`\`) and send the blocks again.`,
      };
    }
    if (blocks.length === 0) return { kind: 'final', answer: text };
    const calls = blocks.map((block, index): PlannedCall => {
      const tool = tools.find((candidate) => candidate.name === block.toolName)!;
      const label = `block ${index + 1} (\`\`\`${block.tag}${block.savePath ? `:${block.savePath}` : ''})`;
      const args = tool.fence!.toArguments({
        code: block.code,
        ...(block.savePath ? { savePath: block.savePath } : {}),
      });
      const base = {
        id: `fence-${step}-${index + 1}`,
        name: tool.name,
        label,
        ...(block.savePath && tool.name !== 'write_file' ? { savePath: block.savePath, saveContent: block.code } : {}),
      };
      return typeof args === 'string'
        ? { ...base, arguments: '{}', error: args }
        : { ...base, arguments: JSON.stringify(args) };
    });
    return { kind: 'tools', calls };
  },
  messageForResult: () => undefined,
  messagesForStep: (results) => [{ role: 'user', content: feedbackText(results), _feedback: true }],
  replyMessage: (text) => ({ role: 'user', content: text, _feedback: true }),
  pendingCalls(calls, after: readonly Message[]) {
    // The feedback is committed once for the whole step: either every block has its result or none.
    return after.some((entry) => entry.role === 'user') ? [] : [...calls];
  },
};

function feedbackText(results: readonly CallResult[]): string {
  const parts = results.map((result) => {
    const label = result.call.label ?? result.call.name;
    if (result.status === 'not_run') return `[not run] ${label}: ${result.output}`;
    return `[${result.status === 'ok' ? 'success' : 'failure'}] ${label}:\n${result.output}`;
  });
  const failed = results.some((result) => result.status === 'failed');
  const skipped = results.some((result) => result.status === 'not_run');
  const ending = failed
    ? 'Fix the failing block and send the blocks that still need to run.'
    : skipped
      ? 'Send the blocks that did not run again if they are still needed.'
      : 'All blocks ran.';
  return `${parts.join('\n\n')}\n\n${ending}`;
}
