/**
 * The environment a tool process gets: an allow-list, never the worker's own. API keys, the Redis
 * URL and anything else the worker holds stay out of reach of code a model wrote.
 */

const PASSED_THROUGH = ['PATH', 'LANG', 'LC_ALL', 'TZ'] as const;

export function toolEnvironment(options: { workdir: string; parent?: NodeJS.ProcessEnv }): Record<string, string> {
  const parent = options.parent ?? process.env;
  const env: Record<string, string> = {
    HOME: options.workdir,
    TMPDIR: options.workdir,
    TERM: 'dumb',
    PYTHONUNBUFFERED: '1',
    PYTHONDONTWRITEBYTECODE: '1',
  };
  for (const name of PASSED_THROUGH) {
    const value = parent[name];
    if (value) env[name] = value;
  }
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  return env;
}
