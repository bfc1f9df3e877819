// Decision 0308: the values a saved tool's typed parameters accept, the same for every connector type (the live checks
// on PostgreSQL and MariaDB are in test/connectors/conformance.ts and test/saved-tools.test.ts).
import { describe, expect, test } from 'bun:test';
import { paramValueProblem, savedArgumentsProblem, timestampArgumentToUtc } from '../src/connectors/shared/param-values.ts';
import type { SavedParam } from '../src/connectors/types.ts';

const p = (type: SavedParam['type'], extra: Partial<SavedParam> = {}): SavedParam => ({ name: 'v', type, description: '', ...extra });
const ok = (param: SavedParam, value: unknown) => paramValueProblem(param, value) === null;

describe('typed parameter values', () => {
  test('dates: real calendar days only (month lengths, leap years by the Gregorian rule, years 0001-9999)', () => {
    for (const d of ['2024-02-29', '2000-02-29', '2023-01-31', '2023-04-30', '0001-01-01', '9999-12-31']) expect([d, ok(p('date'), d)]).toEqual([d, true]);
    for (const d of ['2020-02-30', '2023-02-29', '1900-02-29', '2100-02-29', '2023-04-31', '2023-06-31', '2023-09-31', '2023-11-31']) {
      expect([d, ok(p('date'), d)]).toEqual([d, false]);
    }
    for (const d of ['2023-00-10', '2023-13-01', '2023-01-00', '0000-01-01', '2023-1-01', '20230101', '2023-01-01T00:00:00Z', ' 2023-01-01']) {
      expect([d, ok(p('date'), d)]).toEqual([d, false]);
    }
    expect(paramValueProblem(p('date'), '2100-02-29')).toBe(
      'The argument "v" is refused: "2100-02-29" is not a valid date: the day must be from 01 to 28 in 2100-02.',
    );
  });

  test('timestamps: a real day, 00-23 hours, 00-59 minutes and seconds, offsets within ±14:00', () => {
    const good = [
      '2024-02-29T23:59:59Z',
      '2024-01-01 00:00',
      '2024-01-01T12:30:15.123456+05:30',
      '2024-01-01T12:30-0930',
      '2024-01-01T00:00:00+14:00',
      '2024-01-01T00:00:00-14',
    ];
    for (const v of good) expect([v, ok(p('timestamp'), v)]).toEqual([v, true]);
    const bad = [
      '2023-02-29T00:00:00Z',
      '2024-01-01T24:00:00Z',
      '2024-01-01T23:60:00Z',
      '2024-01-01T23:59:60Z',
      '2024-01-01T00:00:00+14:01',
      '2024-01-01T00:00:00+15:00',
      '2024-01-01T00:00:00+05:60',
      '2024-01-01T00:00:00.1234567Z',
      '2024-01-01',
      'yesterday',
    ];
    for (const v of bad) expect([v, ok(p('timestamp'), v)]).toEqual([v, false]);
  });

  test('integers exact and within their bounds, numbers finite, booleans, enums, strings', () => {
    expect(ok(p('integer'), 2 ** 53 - 1)).toBe(true);
    expect(ok(p('integer'), -(2 ** 53 - 1))).toBe(true);
    expect(paramValueProblem(p('integer'), 2 ** 53)).toBe(
      'The argument "v" is refused: 9007199254740992 is not a valid integer: it must be an integer from -9007199254740991 to 9007199254740991.',
    );
    expect(ok(p('integer'), 1.5)).toBe(false);
    expect(ok(p('integer'), '1')).toBe(false);
    expect(paramValueProblem(p('integer', { minimum: 1, maximum: 10 }), 11)).toContain('it must be at most 10');
    expect(ok(p('number'), 1e308)).toBe(true);
    expect(ok(p('number'), Number.POSITIVE_INFINITY)).toBe(false);
    expect(ok(p('number'), Number.NaN)).toBe(false);
    expect(ok(p('boolean'), false)).toBe(true);
    expect(ok(p('boolean'), 0)).toBe(false);
    expect(ok(p('enum', { values: ['a', 'b'] }), 'b')).toBe(true);
    expect(ok(p('enum', { values: ['a', 'b'] }), 'c')).toBe(false);
    expect(ok(p('string'), '')).toBe(true);
    expect(ok(p('string'), 5)).toBe(false);
  });

  test('arrays: each element by its items type, named by position; null and absent values are the schema’s', () => {
    const dates = p('array', { items: { type: 'date' } });
    expect(ok(dates, ['2024-02-29', null])).toBe(true);
    expect(paramValueProblem(dates, ['2024-02-29', '2023-02-29'])).toBe(
      'The argument "v" is refused: element 1 ("2023-02-29") is not valid: the day must be from 01 to 28 in 2023-02.',
    );
    expect(paramValueProblem(dates, '2024-02-29')).toBe('The argument "v" must be an array.');
    expect(ok(p('date'), null)).toBe(true);
    expect(ok(p('date'), undefined)).toBe(true);
    expect(savedArgumentsProblem([p('integer', { name: 'a' }), p('date', { name: 'b' })], { a: 1, b: '2020-02-30' })).toContain('"b"');
    expect(savedArgumentsProblem([p('integer', { name: 'a' })], { a: 1 })).toBeNull();
    // A long value is cut in the refusal.
    expect(paramValueProblem(p('date'), 'x'.repeat(100))).toBe(
      `The argument "v" is refused: "${'x'.repeat(39)}... is not a valid date: it must be a date, YYYY-MM-DD.`,
    );
  });

  test('a timestamp argument as UTC text for types without zones: offsets applied, the fraction kept, no offset is UTC', () => {
    expect(timestampArgumentToUtc('2024-01-02T05:04:05.123456+02:00')).toBe('2024-01-02 03:04:05.123456');
    expect(timestampArgumentToUtc('2024-01-01T22:34:05.123457-04:30')).toBe('2024-01-02 03:04:05.123457');
    expect(timestampArgumentToUtc('2024-01-02 03:04')).toBe('2024-01-02 03:04:00');
    expect(timestampArgumentToUtc('2024-01-02T03:04:05Z')).toBe('2024-01-02 03:04:05');
    expect(timestampArgumentToUtc('2024-03-01T00:30:00+01:00')).toBe('2024-02-29 23:30:00');
    expect(timestampArgumentToUtc('0050-01-01T00:30:00+01:00')).toBe('0049-12-31 23:30:00');
    expect(timestampArgumentToUtc('9999-12-31T23:59:59.5+0000')).toBe('9999-12-31 23:59:59.5');
  });
});
