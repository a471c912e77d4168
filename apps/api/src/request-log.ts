/**
 * One log line and one histogram sample per API request, once its response is done (an SSE stream
 * when it closes): method, route (the pattern, e.g. `/v1/tasks/:id`, so ids do not become labels),
 * status, duration and tenant. Health checks and scrapes are logged at debug level only. With tracing
 * on, each request is also a server span, active while its route runs.
 */
import type { RequestHandler } from 'express';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Logger, Metrics, Tracing } from '@agentq/telemetry';

const QUIET = new Set(['/healthz', '/readyz', '/metrics']);

export function requestLog(options: { logger: Logger; metrics: Metrics; tracing: Tracing }): RequestHandler {
  const { logger, metrics, tracing } = options;
  return (request, response, next) => {
    const started = performance.now();
    const span = tracing.enabled
      ? tracing.tracer.startSpan(request.method, {
          kind: SpanKind.SERVER,
          attributes: { 'http.request.method': request.method, 'url.path': request.path },
        })
      : undefined;
    response.once('close', () => {
      const durationMs = Math.round((performance.now() - started) * 10) / 10;
      const pattern = request.route ? `${request.baseUrl}${(request.route as { path: string }).path}` : undefined;
      const status = response.headersSent ? response.statusCode : 499;
      const tenant = (response.locals.principal as { tenant?: string } | undefined)?.tenant;
      metrics.httpRequests.observe(
        { method: request.method, route: pattern ?? 'other', status: String(status) },
        durationMs / 1000,
      );
      const line = {
        method: request.method,
        route: pattern ?? request.path,
        status,
        durationMs,
        ...(tenant ? { tenant } : {}),
      };
      if (status >= 500) logger.error(line, 'request');
      else if (QUIET.has(request.path)) logger.debug(line, 'request');
      else logger.info(line, 'request');
      if (span) {
        span.updateName(`${request.method} ${pattern ?? 'other'}`);
        span.setAttributes({ 'http.response.status_code': status, ...(pattern ? { 'http.route': pattern } : {}) });
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      }
    });
    if (span) context.with(trace.setSpan(context.active(), span), next);
    else next();
  };
}
