/**
 * OpenTelemetry traces, on when OTEL_EXPORTER_OTLP_ENDPOINT is set: spans go to that collector over
 * OTLP/HTTP, in batches. Off, nothing is set up and every call site checks `enabled` first, so tracing
 * costs nothing. (The exporter also honours the standard OTEL_* variables: headers, timeouts, batching.)
 *
 * A task's trace context travels with the task as a W3C `traceparent` (stored in its record, which every
 * job run reads in its claim), so a run on any worker, on any machine, continues the task's trace.
 */
import { context, propagation, ROOT_CONTEXT, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

export interface Tracing {
  enabled: boolean;
  tracer: Tracer;
  /** The W3C traceparent of a span (to store with a task). */
  traceparent(span: Span): string;
  /** The traceparent of the span active here, if any. */
  activeTraceparent(): string | undefined;
  /** The context a stored traceparent continues (the root context when there is none). */
  contextOf(traceparent: string | undefined): Context;
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}

const w3c = new W3CTraceContextPropagator();
const getter = {
  get: (carrier: Record<string, string>, key: string) => carrier[key],
  keys: (carrier: Record<string, string>) => Object.keys(carrier),
};
const setter = { set: (carrier: Record<string, string>, key: string, value: string) => (carrier[key] = value) };

function traceparentIn(active: Context): string | undefined {
  const carrier: Record<string, string> = {};
  w3c.inject(active, carrier, setter);
  return carrier.traceparent;
}

/**
 * @param options.endpoint the collector's base URL (OTEL_EXPORTER_OTLP_ENDPOINT); none: tracing is off.
 * @param options.serviceName e.g. `agentq-api`; OTEL_SERVICE_NAME when set.
 */
export function startTracing(options: { endpoint?: string | undefined; serviceName: string }): Tracing {
  if (!options.endpoint) {
    return {
      enabled: false,
      tracer: trace.getTracer('agentq'),
      traceparent: () => '',
      activeTraceparent: () => undefined,
      contextOf: () => ROOT_CONTEXT,
      shutdown: () => Promise.resolve(),
    };
  }
  const exporter = new OTLPTraceExporter({ url: `${options.endpoint.replace(/\/+$/, '')}/v1/traces` });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  // The global provider, an AsyncLocalStorage context manager (the active span follows awaits) and W3C propagation.
  provider.register({ propagator: w3c });
  const tracer = provider.getTracer('agentq');
  return {
    enabled: true,
    tracer,
    traceparent: (span) => traceparentIn(trace.setSpan(ROOT_CONTEXT, span)) ?? '',
    activeTraceparent: () => traceparentIn(context.active()),
    contextOf: (traceparent) =>
      traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }, getter) : ROOT_CONTEXT,
    shutdown: () => provider.shutdown(),
  };
}
