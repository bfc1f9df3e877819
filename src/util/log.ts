/**
 * The structured logger (pino): one JSON line per event on stdout, human-readable (pino-pretty) when stdout is a
 * terminal. Callers pass no secrets; `redact` strips the usual suspects from details anyway.
 */
import pino from 'pino';
import pinoPretty from 'pino-pretty';
import type { Config } from '../config.ts';

export interface Logger {
  error(message: string, details?: Record<string, unknown>): void;
  info(message: string, details?: Record<string, unknown>): void;
  debug(message: string, details?: Record<string, unknown>): void;
  /** Whether a call at this level writes anything (lets a hot path skip building details). */
  enabled(level: 'error' | 'info' | 'debug'): boolean;
  /** Writes what is buffered (shutdown). */
  flush(): void;
}

const LEVELS = { silent: 0, error: 1, info: 2, debug: 3 } as const;
const SECRET_KEYS = /authorization|api[-_]?key|secret|password|token|credential/i;

function redact(details: Record<string, unknown>): Record<string, unknown> {
  for (const key in details)
    if (SECRET_KEYS.test(key)) return Object.fromEntries(Object.entries(details).map(([k, v]) => [k, SECRET_KEYS.test(k) ? '[redacted]' : v]));
  return details;
}

/** Where lines go: stdout (pretty on a terminal), or a stream of the caller's (tests). */
export interface LogDestination {
  write(line: string): void;
}

function destinationFor(explicit: LogDestination | undefined): pino.DestinationStream {
  if (explicit) return explicit;
  if (process.stdout.isTTY) {
    // pino-pretty runs in this thread (no worker thread), synchronously.
    return pinoPretty({ messageKey: 'message', translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', sync: true });
  }
  return pino.destination({ dest: 1, sync: false });
}

export function createLogger(level: Config['logLevel'], destination?: LogDestination): Logger {
  const threshold = LEVELS[level];
  const out = pino(
    {
      level: level === 'silent' ? 'silent' : level,
      base: null,
      messageKey: 'message',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    level === 'silent' ? undefined : destinationFor(destination),
  );
  return {
    error: (m, d) => (threshold >= 1 ? out.error(d ? redact(d) : {}, m) : undefined),
    info: (m, d) => (threshold >= 2 ? out.info(d ? redact(d) : {}, m) : undefined),
    debug: (m, d) => (threshold >= 3 ? out.debug(d ? redact(d) : {}, m) : undefined),
    enabled: (lvl) => LEVELS[lvl] <= threshold,
    flush: () => {
      try {
        out.flush();
      } catch {
        // A destination that cannot flush (a closed pipe) has nothing left to give.
      }
    },
  };
}

/** Describes an unknown error for a log line without its stack (stacks stay out of responses and logs alike). */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err).slice(0, 500);
  // drizzle wraps a store error as "Failed query: <sql>\nparams: <values>": the values never reach a log line (they
  // can be digests, sealed secrets, arguments), and the server's own error, the cause, comes first so that a long
  // statement cannot push it past the cut.
  const message = err.message.replace(/\n\s*params:[\s\S]*$/, '');
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return `${err.name}: ${typeof code === 'string' ? `${code} ` : ''}${cause.message.replace(/\n\s*params:[\s\S]*$/, '')} | ${message}`.slice(0, 500);
  }
  return `${err.name}: ${message}`.slice(0, 500);
}
