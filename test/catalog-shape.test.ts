// The catalog shares one compiled validator between input schemas of the same shape (src/tools/catalog.ts shapeOf):
// annotations do not count, but a property named like an annotation, and data inside default/const/enum, do.
import { describe, expect, test } from 'bun:test';
import { shapeOf } from '../src/tools/catalog.ts';

const table = (qualified: string) => ({
  type: 'object',
  properties: {
    sql: { type: 'string', description: `A single SELECT statement on ${qualified}` },
    limit: { type: 'integer', description: 'Maximum rows to return', default: 100, minimum: 1, maximum: 1000 },
  },
  required: ['sql'],
  additionalProperties: false,
});

describe('schema shapes', () => {
  test('two table tools that differ only in their descriptions share a shape; a different bound does not', () => {
    expect(shapeOf(table('public.a'))).toBe(shapeOf(table('public.b')));
    expect(shapeOf({ ...table('x'), title: 'T', $comment: 'c' })).toBe(shapeOf(table('y')));
    const other = table('x');
    other.properties.limit.maximum = 10;
    expect(shapeOf(other)).not.toBe(shapeOf(table('x')));
  });

  test('a property named description or title is part of the shape', () => {
    const withDescription = { type: 'object', properties: { description: { type: 'string' } }, required: ['description'] };
    const withTitle = { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] };
    const without = { type: 'object', properties: {}, required: ['description'] };
    expect(shapeOf(withDescription)).not.toBe(shapeOf(without));
    expect(shapeOf(withDescription)).not.toBe(shapeOf(withTitle));
  });

  test('data in default, const and enum is kept whole, a description key in it too', () => {
    const withDefault = (d: unknown) => ({ type: 'object', properties: { o: { type: 'object', default: d } } });
    expect(shapeOf(withDefault({ description: 'a' }))).not.toBe(shapeOf(withDefault({ description: 'b' })));
    expect(shapeOf({ const: { title: 1 } })).not.toBe(shapeOf({ const: { title: 2 } }));
    expect(shapeOf({ enum: [{ description: 'x' }] })).not.toBe(shapeOf({ enum: [{ description: 'y' }] }));
  });
});
