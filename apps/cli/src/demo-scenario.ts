/**
 * The scripted model behind `npm run demo`: it plays a believable agent (write a file, run it,
 * report) so a newcomer sees the whole system move without a model. Every answer says it is a demo.
 */
import type { DoubleReply, DoubleRequest, DoubleRule } from '@agentq/llm';

export const DEMO_MODEL = 'agentq-demo';

function demoReply(request: DoubleRequest): DoubleReply {
  const prompt = request.messages.find((message) => message.role === 'user')?.content ?? '';
  const toolNames = new Set((request.tools ?? []).map((tool) => tool.function.name));
  const toolResults = request.messages.filter((message) => message.role === 'tool');
  const summary = prompt.length > 80 ? `${prompt.slice(0, 77)}...` : prompt;
  if (toolNames.has('write_file') && toolResults.length === 0) {
    return {
      content: 'I will write a small script for this and run it.',
      toolCalls: [{ name: 'write_file', arguments: { path: 'demo.sh', content: `echo "demo task: ${summary.replace(/["\\$`]/g, '')}"\ndate -u\n` } }],
    };
  }
  if (toolNames.has('bash') && toolResults.length === 1) {
    return { toolCalls: [{ name: 'bash', arguments: { command: 'bash demo.sh && ls -l' } }] };
  }
  const lastOutput = toolResults.at(-1)?.content ?? '';
  return {
    content: `[demo] This answer comes from agentq's built-in demo model, not a real LLM. Task: "${summary}".${lastOutput ? `\nThe script printed:\n${lastOutput}` : ''}`,
  };
}

export const DEMO_RULES: DoubleRule[] = [{ reply: demoReply }];
