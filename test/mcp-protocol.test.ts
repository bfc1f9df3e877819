// The JSON-RPC method table of mcp/protocol.ts on its own (no HTTP): a method is one entry, its params are checked
// against its jsonrpc-schema.json entry, and what it throws becomes the right JSON-RPC error. This is the seam new
// methods plug into without touching the transport (handlers/mcp.ts); the endpoint suites cover it over HTTP.
import { describe, expect, test } from 'bun:test';
import { RpcCode, RpcError } from '../src/errors.ts';
import { method, MethodTable } from '../src/mcp/protocol.ts';
import { RawJson } from '../src/util/jsonrpc-schema.ts';

type Session = { who: string };

function table(onInternal: (method: string, err: unknown) => void = () => {}) {
  return new MethodTable<Session>(
    {
      'tools/call': method('ToolsCallParams', (session, params) => ({ called: params.name, by: session.who })),
      echo: method(undefined, (_s, params) => params),
      cached: method(undefined, () => new RawJson('{"pre":"serialised"}')),
      refuses: method(undefined, () => {
        throw new RpcError(RpcCode.InsufficientScope, 'no');
      }),
      breaks: method(undefined, () => {
        throw new Error('connection string postgres://secret@db');
      }),
    },
    onInternal,
  );
}

const parse = (text: string) => JSON.parse(text) as { id: unknown; result?: unknown; error?: { code: number; message: string } };

describe('MCP method table', () => {
  test('a registered method answers with its result, typed params and the session', async () => {
    const answer = parse(await table().answer({ who: 'key-1' }, 7, 'tools/call', { name: 'query_items', arguments: {} }));
    expect(answer).toEqual({ jsonrpc: '2.0', id: 7, result: { called: 'query_items', by: 'key-1' } } as never);
  });

  test('a pre-serialised result is spliced in as is', async () => {
    expect(await table().answer({ who: 'x' }, 'a', 'cached', {})).toBe('{"jsonrpc":"2.0","id":"a","result":{"pre":"serialised"}}');
  });

  test('params failing the schema entry are -32602 naming the field, and the method does not run', async () => {
    const answer = parse(await table().answer({ who: 'x' }, 1, 'tools/call', { arguments: {} }));
    expect(answer.error!.code).toBe(RpcCode.InvalidParams);
    expect(answer.error!.message).toContain('name');
  });

  test('an unknown method is -32601 listing the registered ones', async () => {
    const answer = parse(await table().answer({ who: 'x' }, 2, 'resources/list', {}));
    expect(answer.error).toEqual({
      code: RpcCode.MethodNotFound,
      message: 'Method not found: resources/list. Supported: tools/call, echo, cached, refuses, breaks.',
    });
  });

  test('an RpcError passes through; anything else is an opaque -32603, reported but never shown', async () => {
    const reported: string[] = [];
    const t = table((name) => reported.push(name));
    expect(parse(await t.answer({ who: 'x' }, 3, 'refuses', {})).error).toEqual({ code: RpcCode.InsufficientScope, message: 'no' });
    const broken = await t.answer({ who: 'x' }, 4, 'breaks', {});
    expect(parse(broken).error).toEqual({ code: RpcCode.InternalError, message: 'Internal error' });
    expect(broken).not.toContain('secret');
    expect(reported).toEqual(['breaks']);
  });
});
