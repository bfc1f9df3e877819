// The `mcp` type's tool-catalog step on hand-made upstream listings: what a hostile or sloppy upstream's tools/list
// turns into (names, schema checks, caps). The live upstream tests are in test/mcp-connector.test.ts.
import { describe, expect, test } from 'bun:test';
import { MAX_INPUT_SCHEMA_BYTES, MAX_UPSTREAM_TOOLS, upstreamToolSpecs } from '../../src/connectors/mcp/tools.ts';
import { patternProblem } from '../../src/connectors/mcp/patterns.ts';
import { verifies } from '../requirements.ts';

const obj = (properties: Record<string, unknown> = {}) => ({ type: 'object', properties });

describe('upstream tools/list → tool specs', () => {
  test('names are <connector>__<tool>, sanitised, at most 64 characters, collisions suffixed in upstream order', () => {
    verifies('MCPC-NAMES');
    const { specs } = upstreamToolSpecs('My Server!', [
      { name: 'Get-Weather', inputSchema: obj() },
      { name: 'get_weather', inputSchema: obj() },
      { name: 'x'.repeat(100), inputSchema: obj() },
      { name: 'x'.repeat(101), inputSchema: obj() },
    ]);
    expect(specs.map((s) => s.name)).toEqual([
      'my_server___get_weather',
      'my_server___get_weather_2',
      `my_server___${'x'.repeat(52)}`,
      `my_server___${'x'.repeat(50)}_2`,
    ]);
    expect(specs.every((s) => /^[a-z0-9_]{1,64}$/.test(s.name))).toBe(true);
    expect(specs.map((s) => s.target.upstreamName)).toEqual(['Get-Weather', 'get_weather', 'x'.repeat(100), 'x'.repeat(101)]);
  });

  test('input schemas are checked as JSON Schema and size-capped; a failing tool is left out, the rest stay', () => {
    verifies('MCPC-TOOL-SCHEMAS');
    const { specs, skipped } = upstreamToolSpecs('s', [
      { name: 'ok', inputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', ...obj({ a: { type: 'string' } }) } },
      { name: 'array_root', inputSchema: { type: 'array' } },
      { name: 'no_schema' },
      { name: 'bad_keyword', inputSchema: { type: 'object', properties: { a: { type: 'no-such-type' } } } },
      { name: 'remote_ref', inputSchema: { type: 'object', properties: { a: { $ref: 'https://evil.example/schema.json' } } } },
      { name: 'too_big', inputSchema: obj({ a: { type: 'string', description: 'd'.repeat(MAX_INPUT_SCHEMA_BYTES) } }) },
      { name: 42, inputSchema: obj() },
    ]);
    expect(specs.map((s) => s.name)).toEqual(['s__ok']);
    // The dialect marker is dropped (the catalog compiles draft-07); the rest passes through unchanged.
    expect(specs[0]!.inputSchema).toEqual(obj({ a: { type: 'string' } }) as any);
    expect(skipped).toHaveLength(6);
    expect(skipped.map((s) => s.reason).join('\n')).toContain(`larger than ${MAX_INPUT_SCHEMA_BYTES} bytes`);
  });

  test('at most MAX_UPSTREAM_TOOLS tools; hints default to MCP defaults when the upstream sets none', () => {
    verifies('MCPC-TOOL-SCHEMAS');
    const many = Array.from({ length: MAX_UPSTREAM_TOOLS + 5 }, (_, i) => ({ name: `t${i}`, inputSchema: obj() }));
    const { specs } = upstreamToolSpecs('s', many);
    expect(specs).toHaveLength(MAX_UPSTREAM_TOOLS);
    expect(specs[0]!.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, openWorldHint: true });
  });

  test('patterns the gateway would run on arguments: exponential shapes and backreferences are refused, ordinary ones pass', () => {
    verifies('MCPC-TOOL-ONE-BY-ONE');
    for (const safe of [
      '^[a-z0-9_-]{1,64}$',
      '^\\d{4}-\\d{2}-\\d{2}$',
      '^(foo|bar)$',
      '^(?:[A-Z]{2})?\\d+$',
      '^[^@]+@[^@]+\\.[a-z]+$',
      '(ab)?c*',
      '^(a{0,1}b)*$',
    ]) {
      expect([safe, patternProblem(safe)]).toEqual([safe, null]);
    }
    for (const [unsafe, word] of [
      ['^(a+)+$', 'exponential'],
      ['^(a|a)*$', 'exponential'],
      ['^(\\w+\\s?)*$', 'exponential'],
      ['((ab)*c)+', 'exponential'],
      ['(x{2,})*', 'exponential'],
      ['^(a*){3}$', 'exponential'],
      ['(a)\\1', 'backreference'],
      ['(?<n>a)\\k<n>', 'backreference'],
      ['(', 'not a valid'],
      ['a'.repeat(513), 'longer than'],
    ] as const) {
      expect([unsafe, patternProblem(unsafe)]).toEqual([unsafe, expect.stringContaining(word)]);
    }
    // In a schema: `pattern` values and `patternProperties` keys; the tool is skipped, the others stay.
    const { specs, skipped } = upstreamToolSpecs('s', [
      { name: 'redos', inputSchema: obj({ a: { type: 'string', pattern: '^(a+)+$' } }) },
      { name: 'redos_keys', inputSchema: { type: 'object', patternProperties: { '^(a|aa)+$': { type: 'string' } } } },
      { name: 'fine', inputSchema: obj({ a: { type: 'string', pattern: '^[a-z]+$' } }) },
    ]);
    expect(specs.map((s) => s.name)).toEqual(['s__fine']);
    expect(skipped.map((s) => s.name)).toEqual(['redos', 'redos_keys']);
  });
});
