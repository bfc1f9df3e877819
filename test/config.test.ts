/** The config module: defaults, and a clear error naming the variable for each bad value (checked at start). */
import { describe, expect, test } from 'bun:test';
import { ConfigError, loadConfig } from '../src/config.ts';

describe('config', () => {
  test('defaults: embedded store in ./data, port 8080, 1 MiB body cap, demo on', () => {
    const config = loadConfig({});
    expect(config.port).toBe(8080);
    expect(config.publicUrl).toBe('http://localhost:8080');
    expect(config.databaseUrl).toBeNull();
    expect(config.dataDir).toBe('./data');
    expect(config.maxBodyBytes).toBe(1_048_576);
    expect(config.demo).toBe(true);
    expect(config.accessTokenTtlSeconds).toBe(3600);
  });

  test('operations (issue 15): tracing off unless OTEL_EXPORTER_OTLP_ENDPOINT is set; service name; shutdown deadline', () => {
    const defaults = loadConfig({});
    expect(defaults.otlpEndpoint).toBeNull();
    expect(defaults.serviceName).toBe('toolgate');
    expect(defaults.shutdownDeadlineMs).toBe(10_000);
    expect(defaults.traceSampleRatio).toBe(1);
    expect(loadConfig({ OTEL_TRACES_SAMPLER_ARG: '0.1' }).traceSampleRatio).toBe(0.1);
    const set = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SERVICE_NAME: 'gw-eu', TOOLGATE_SHUTDOWN_DEADLINE_MS: '25000' });
    expect(set.otlpEndpoint).toBe('http://collector:4318');
    expect(set.serviceName).toBe('gw-eu');
    expect(set.shutdownDeadlineMs).toBe(25_000);
  });

  test('a PostgreSQL store turns the demo off by default and needs the shared secret key', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://db/toolgate' })).toThrow(/TOOLGATE_SECRET_KEY/);
    const config = loadConfig({ DATABASE_URL: 'postgres://db/toolgate', TOOLGATE_SECRET_KEY: 'ab'.repeat(32) });
    expect(config.demo).toBe(false);
  });

  const bad: Array<[string, Record<string, string>]> = [
    ['PORT', { PORT: 'eighty' }],
    ['PORT', { PORT: '70000' }],
    ['TOOLGATE_PUBLIC_URL', { TOOLGATE_PUBLIC_URL: 'not a url' }],
    ['TOOLGATE_PUBLIC_URL', { TOOLGATE_PUBLIC_URL: 'ftp://example.com' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://db/x' }],
    ['TOOLGATE_SECRET_KEY', { TOOLGATE_SECRET_KEY: 'short' }],
    ['TOOLGATE_OPERATOR_TOKEN', { TOOLGATE_OPERATOR_TOKEN: 'too-short' }],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', { OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' }],
    ['TOOLGATE_SHUTDOWN_DEADLINE_MS', { TOOLGATE_SHUTDOWN_DEADLINE_MS: '-1' }],
    ['TOOLGATE_AUTH_CACHE_TTL_MS', { TOOLGATE_AUTH_CACHE_TTL_MS: '-1' }],
    ['TOOLGATE_AUTH_CACHE_TTL_MS', { TOOLGATE_AUTH_CACHE_TTL_MS: '600000' }],
    ['OTEL_TRACES_SAMPLER_ARG', { OTEL_TRACES_SAMPLER_ARG: '1.5' }],
    ['REDIS_URL', { REDIS_URL: 'http://127.0.0.1:6379' }],
    ['TOOLGATE_MAX_BODY_BYTES', { TOOLGATE_MAX_BODY_BYTES: '12' }],
    ['TOOLGATE_STATEMENT_TIMEOUT_MS', { TOOLGATE_STATEMENT_TIMEOUT_MS: '1.5' }],
    ['TOOLGATE_LOG_LEVEL', { TOOLGATE_LOG_LEVEL: 'loud' }],
    ['TOOLGATE_OUTBOUND_ALLOW_HOSTS', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: 'https://idp.example.com/path' }],
  ];
  test.each(bad)('%s: a bad value stops start-up with an error naming it', (name, env) => {
    let error: unknown;
    try {
      loadConfig(env);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(name);
  });
});
