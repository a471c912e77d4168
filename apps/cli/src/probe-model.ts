/**
 * Whether the model endpoint answers at all, asked once at start (`GET /models`, which every
 * OpenAI-compatible server has): a wrong URL or a server that is down shows at start, not as failed
 * tasks later. Only a warning: the endpoint may come up after agentq.
 */
import type { Config } from '@agentq/config';

/** Undefined when the endpoint answers; else what is wrong, naming the endpoint but never the key. */
export async function probeModelEndpoint(config: Config, timeoutMs = 3_000): Promise<string | undefined> {
  const base = (config.OPENAI_BASE_URL ?? 'https://api.openai.com/v1').replace(/\/$/, '');
  const shown = (() => {
    const url = new URL(base);
    return `${url.protocol}//${url.host}${url.pathname}`;
  })();
  try {
    const response = await fetch(`${base}/models`, {
      headers: config.OPENAI_API_KEY ? { authorization: `Bearer ${config.OPENAI_API_KEY}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    if (response.ok) return undefined;
    return `${shown} answers GET /models with ${response.status}${response.status === 401 || response.status === 403 ? ': check OPENAI_API_KEY' : ''}`;
  } catch (error) {
    const reason =
      (error as Error).name === 'TimeoutError'
        ? `no answer within ${timeoutMs / 1000} s`
        : ((error as { cause?: Error }).cause?.message ?? (error as Error).message);
    return `${shown} does not answer (${reason})`;
  }
}
