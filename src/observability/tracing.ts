/**
 * OpenTelemetry spans, exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set. Unset, nothing is loaded and
 * `inSpan` is one null check around the traced function: no tracer, no context manager, no span objects.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, ROOT_CONTEXT, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import { parseTraceparent } from './traceparent.ts';

let tracer: Tracer | null = null;

export function tracingEnabled(): boolean {
  return tracer !== null;
}

export interface TracingOptions {
  /** The OTLP/HTTP base URL; spans go to `${endpoint}/v1/traces` (the OTel convention for this variable). */
  endpoint: string;
  serviceName: string;
  /** Extra resource attributes (service.instance.id). */
  attributes?: Attributes;
  /** Share of new traces recorded; a sampled parent (traceparent) is always followed. */
  sampleRatio?: number;
}

/**
 * Starts the exporter and the async context that carries the active span through awaits. One per process: a
 * second gateway in the same process (tests) shares it. Returns a stop that flushes what is buffered.
 */
export async function startTracing(options: TracingOptions): Promise<() => Promise<void>> {
  if (tracer) return async () => {};
  const [
    { TracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler },
    { OTLPTraceExporter },
    { resourceFromAttributes },
    { AsyncLocalStorageContextManager },
    { W3CTraceContextPropagator },
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
  ]);
  const exporter = new OTLPTraceExporter({ url: `${options.endpoint.replace(/\/+$/, '')}/v1/traces` });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName, ...options.attributes }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(options.sampleRatio ?? 1) }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000 })],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  // The provider is not registered globally: libraries that trace through the global API (drizzle, the Redis
  // client) stay silent, so a trace shows the gateway's own steps, not every store query.
  tracer = provider.getTracer('toolgate');
  return async () => {
    tracer = null;
    await provider.shutdown().catch(() => undefined);
    context.disable();
    propagation.disable();
  };
}

function failed(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
}

function run<T>(span: Span, fn: (span: Span) => T): T {
  let out: T;
  try {
    out = fn(span);
  } catch (err) {
    failed(span, err);
    span.end();
    throw err;
  }
  if (out instanceof Promise) {
    return out.then(
      (value) => {
        span.end();
        return value;
      },
      (err) => {
        failed(span, err);
        span.end();
        throw err;
      },
    ) as T;
  }
  span.end();
  return out;
}

/** Runs `fn` inside a child span of the active one (or directly, when tracing is off). Attributes: bounded values only. */
export function inSpan<T>(name: string, fn: () => T, attributes?: Attributes): T {
  const t = tracer;
  if (t === null) return fn();
  return t.startActiveSpan(name, { attributes }, (span) => run(span, fn));
}

/** Marks the active span as failed without throwing (a tool result with isError, a refusal answered as JSON). */
export function markActiveSpan(attributes: Attributes, error = false): void {
  if (tracer === null) return;
  const span = trace.getActiveSpan();
  if (!span) return;
  span.setAttributes(attributes);
  if (error) span.setStatus({ code: SpanStatusCode.ERROR });
}

const headerGetter = {
  get: (carrier: Headers, key: string) => carrier.get(key) ?? undefined,
  keys: (carrier: Headers) => [...carrier.keys()],
};

/**
 * The server span of one HTTP request, child of the caller's span when it sent a valid `traceparent`. `fn` gets the
 * span (null when tracing is off) to set the status code on.
 */
export function inRequestSpan<T>(request: Request, name: string, fn: (span: Span | null) => Promise<T>): Promise<T> {
  const t = tracer;
  if (t === null) return fn(null);
  // OTel's parser is laxer (it takes a leading or trailing space, for one): only a value the spec allows reaches it,
  // so the span adopts exactly the traceparents the request id does.
  const parent = parseTraceparent(request.headers.get('traceparent')) ? propagation.extract(ROOT_CONTEXT, request.headers, headerGetter) : ROOT_CONTEXT;
  return t.startActiveSpan(name, { kind: SpanKind.SERVER }, parent, (span) => run(span, fn));
}
