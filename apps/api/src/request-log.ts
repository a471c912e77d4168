/**
 * One log line and one histogram sample per API request, once its response is done (an SSE stream
 * when it closes): method, route (the pattern, e.g. `/v1/tasks/:id`, so ids do not become labels),
 * status, duration and tenant. Health checks and scrapes are logged at debug level only.
 */
import type { RequestHandler } from 'express';
import type { Logger, Metrics } from '@agentq/telemetry';

const QUIET = new Set(['/healthz', '/readyz', '/metrics']);

export function requestLog(options: { logger: Logger; metrics: Metrics }): RequestHandler {
  const { logger, metrics } = options;
  return (request, response, next) => {
    const started = performance.now();
    response.once('close', () => {
      const durationMs = Math.round((performance.now() - started) * 10) / 10;
      const pattern = request.route ? `${request.baseUrl}${(request.route as { path: string }).path}` : undefined;
      const status = response.headersSent ? response.statusCode : 499;
      const tenant = (response.locals.principal as { tenant?: string } | undefined)?.tenant;
      metrics.httpRequests.observe({ method: request.method, route: pattern ?? 'other', status: String(status) }, durationMs / 1000);
      const line = { method: request.method, route: pattern ?? request.path, status, durationMs, ...(tenant ? { tenant } : {}) };
      if (status >= 500) logger.error(line, 'request');
      else if (QUIET.has(request.path)) logger.debug(line, 'request');
      else logger.info(line, 'request');
    });
    next();
  };
}
