/** A small structured logger. Callers pass no secrets; `redact` strips the usual suspects from details anyway. */
import type { Config } from '../config.ts';

export interface Logger {
  error(message: string, details?: Record<string, unknown>): void;
  info(message: string, details?: Record<string, unknown>): void;
  debug(message: string, details?: Record<string, unknown>): void;
}

const LEVELS = { silent: 0, error: 1, info: 2, debug: 3 } as const;
const SECRET_KEYS = /authorization|api[-_]?key|secret|password|token|credential/i;

export function redact(details: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(details).map(([k, v]) => [k, SECRET_KEYS.test(k) ? '[redacted]' : v]));
}

export function createLogger(level: Config['logLevel']): Logger {
  const threshold = LEVELS[level];
  const emit = (lvl: keyof typeof LEVELS, message: string, details?: Record<string, unknown>) => {
    if (LEVELS[lvl] > threshold) return;
    const line = JSON.stringify({ time: new Date().toISOString(), level: lvl, message, ...(details ? redact(details) : {}) });
    (lvl === 'error' ? console.error : console.log)(line);
  };
  return {
    error: (m, d) => emit('error', m, d),
    info: (m, d) => emit('info', m, d),
    debug: (m, d) => emit('debug', m, d),
  };
}

/** Describes an unknown error for a log line without its stack (stacks stay out of responses and logs alike). */
export function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`.slice(0, 500);
  return String(err).slice(0, 500);
}
