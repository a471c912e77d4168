/**
 * The scripted model behind `npm run demo`: it plays a believable planner and agents (plan two steps,
 * write a file, run it, report) so a newcomer sees the whole system move without a model. Every answer
 * says it is a demo.
 */
import type { DoubleReply, DoubleRequest, DoubleRule } from '@agentq/llm';

export const DEMO_MODEL = 'agentq-demo';

const systemOf = (request: DoubleRequest) => String(request.messages[0]?.content ?? '');
const firstUser = (request: DoubleRequest) =>
  String(request.messages.find((message) => message.role === 'user')?.content ?? '');
const short = (text: string) => (text.length > 80 ? `${text.slice(0, 77)}...` : text).replace(/\s+/g, ' ');

function planReply(request: DoubleRequest): DoubleReply {
  const goal = short(firstUser(request));
  const plan = [
    { id: '1', agent: 'coder', task: `Write a small script about: ${goal}; run it and report its output`, need: [] },
    { id: '2', agent: 'casual', task: 'Explain in two sentences what the script of step 1 printed', need: ['1'] },
  ];
  return { content: `[demo] A two-step plan:\n\`\`\`json\n${JSON.stringify({ plan }, null, 2)}\n\`\`\`` };
}

function finalReply(request: DoubleRequest): DoubleReply {
  return {
    content: `[demo] Final answer, written from the results of the steps:\n${short(firstUser(request).split('The results of its steps:')[1] ?? '')}`,
  };
}

function agentReply(request: DoubleRequest): DoubleReply {
  const prompt = short(firstUser(request));
  const toolNames = new Set((request.tools ?? []).map((tool) => tool.function.name));
  const toolResults = request.messages.filter((message) => message.role === 'tool');
  if (toolNames.has('write_file') && toolResults.length === 0) {
    return {
      content: 'I will write a small script for this and run it.',
      toolCalls: [
        {
          name: 'write_file',
          arguments: { path: 'demo.sh', content: `echo "demo task: ${prompt.replace(/["\\$`]/g, '')}"\ndate -u\n` },
        },
      ],
    };
  }
  if (toolNames.has('bash') && toolResults.length === 1) {
    return { toolCalls: [{ name: 'bash', arguments: { command: 'bash demo.sh && ls -l' } }] };
  }
  const lastOutput = toolResults.at(-1)?.content ?? '';
  return {
    content: `[demo] This answer comes from agentq's built-in demo model, not a real LLM. Task: "${prompt}".${lastOutput ? `\nThe script printed:\n${lastOutput}` : ''}`,
  };
}

function demoReply(request: DoubleRequest): DoubleReply {
  if (systemOf(request).startsWith('You are the planner')) return planReply(request);
  if (systemOf(request).startsWith('You write the final answer')) return finalReply(request);
  return agentReply(request);
}

export const DEMO_RULES: DoubleRule[] = [{ reply: demoReply }];
