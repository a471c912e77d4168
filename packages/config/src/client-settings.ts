/**
 * Where the CLI finds the API, and its key: all a client command needs, read without the rest of the
 * configuration (its schema and file are not loaded, so `agentq list` starts as fast as Node does).
 * `.env` is read as loadConfig reads it; real variables win over it.
 */
import { existsSync } from 'node:fs';

export function clientSettings(options: { envFile?: string | false } = {}): { url: string; apiKey?: string } {
  const envFile = options.envFile ?? '.env';
  if (envFile && existsSync(envFile)) process.loadEnvFile(envFile);
  const url = process.env.AGENTQ_URL || 'http://127.0.0.1:8080';
  const apiKey = process.env.AGENTQ_API_KEY || undefined;
  return { url, ...(apiKey ? { apiKey } : {}) };
}
