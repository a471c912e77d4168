/**
 * The floor under B2: what one model call's client side costs in CPU, in this process, against the
 * same model double (0 ms) at concurrency 50. agentq's model client (the openai SDK with agentq's
 * keep-alive fetch, plus the mapping of messages and answers), the SDK alone with the same fetch,
 * and a bare keep-alive POST with a JSON parse: a step through the SDK cannot cost less than that.
 */
import http from 'node:http';
import OpenAI from 'openai';
import { createOpenAIModel } from '../../packages/llm/dist/index.js';
import { keepAliveFetch } from '../../packages/llm/dist/keep-alive-fetch.js';
import { startModel } from '../lib/model.mjs';
import { alternate, median } from '../lib/stats.mjs';

const CONCURRENCY = 50;

export async function measureModelClient({ quick }) {
  const count = quick ? 2_000 : 6_000;
  const rounds = quick ? 2 : 3;
  const model = await startModel({ script: 'single' });
  const agent = new http.Agent({ keepAlive: true, maxFreeSockets: Infinity });
  const url = new URL('chat/completions', `${model.baseURL}/`);
  const message = (index) => [{ role: 'user', content: `single ${index}` }];
  const agentqModel = createOpenAIModel({ model: 'bench', baseURL: model.baseURL });
  const sdk = new OpenAI({ baseURL: model.baseURL, apiKey: 'not-needed', fetch: keepAliveFetch });
  const calls = {
    agentq: (index) => agentqModel.generate({ messages: message(index), tools: [] }),
    sdk: (index) => sdk.chat.completions.create({ model: 'bench', messages: message(index) }),
    bare: (index) =>
      new Promise((resolve, reject) => {
        const request = http.request(
          url,
          { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
          (response) => {
            const chunks = [];
            response.on('data', (chunk) => chunks.push(chunk));
            response.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          },
        );
        request.on('error', reject);
        request.end(JSON.stringify({ model: 'bench', messages: message(index) }));
      }),
  };
  const measured = (call) => async () => {
    let next = 0;
    const before = process.cpuUsage();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < count) await call(next++);
      }),
    );
    const cpu = process.cpuUsage(before);
    return (cpu.user + cpu.system) / 1000 / count;
  };
  try {
    for (const call of Object.values(calls)) await measured(call)(); // warm-up: connections, JIT
    const samples = await alternate(
      Object.fromEntries(Object.entries(calls).map(([name, call]) => [name, measured(call)])),
      rounds,
    );
    return {
      count,
      rounds,
      agentqMs: median(samples.agentq),
      sdkMs: median(samples.sdk),
      bareMs: median(samples.bare),
    };
  } finally {
    agent.destroy();
    await model.stop();
  }
}
