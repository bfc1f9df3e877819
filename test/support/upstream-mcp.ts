/**
 * A real upstream MCP server for the `mcp` connector tests: the official TypeScript SDK's McpServer over its
 * Streamable HTTP transport (stateless, one server per request, answers as SSE), served by Bun on 127.0.0.1.
 * Tools: echo, add, slow (sleeps), huge (a result of about 2 MB), fail (a tool error), boom (a protocol error),
 * picture (an image block), headers (answers the headers it was sent). Every request's headers are recorded.
 * With `items`, it also serves resources (docs://readme, docs://secret, docs://huge of about 2 MB), a resource template
 * (notes://{id}, its id completable) and prompts (greet with a completable name, forbidden); reads and gets are
 * recorded in `calls` as `read <uri>`, `prompt <name>` and `complete <argument>`.
 */
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { z } from 'zod';

export interface Upstream {
  url: string;
  /** Headers of every HTTP request the upstream received, lower-cased names. */
  seen: Record<string, string>[];
  /** tools/call requests that reached the upstream, by tool name. */
  calls: string[];
  stop(): void;
}

/** 1x1 transparent PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

function build(calls: string[], headers: Record<string, string>): McpServer {
  const server = new McpServer({ name: 'toolgate-test-upstream', version: '1.0.0' });
  const done = (name: string) => calls.push(name);
  server.registerTool(
    'echo',
    { description: 'Echoes its text.', inputSchema: { text: z.string() } },
    async ({ text }) => (done('echo'), { content: [{ type: 'text', text }] }),
  );
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers.',
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ a, b }) => (done('add'), { content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } }),
  );
  server.registerTool('slow', { description: 'Answers after ms milliseconds.', inputSchema: { ms: z.number() } }, async ({ ms }) => {
    done('slow');
    await Bun.sleep(ms);
    return { content: [{ type: 'text', text: `slept ${ms}` }] };
  });
  server.registerTool(
    'huge',
    { description: 'Answers about 2 MB of text.' },
    async () => (done('huge'), { content: [{ type: 'text', text: 'x'.repeat(2_000_000) }] }),
  );
  server.registerTool(
    'fail',
    { description: 'A tool that fails.' },
    async () => (done('fail'), { isError: true, content: [{ type: 'text', text: 'upstream tool failed: disk on fire' }] }),
  );
  server.registerTool('boom', { description: 'Throws a protocol error.' }, async () => {
    done('boom');
    throw new Error('kaboom from upstream');
  });
  server.registerTool(
    'picture',
    { description: 'Answers an image.' },
    async () => (done('picture'), { content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }),
  );
  server.registerTool(
    'headers',
    { description: 'Answers the request headers it saw.' },
    async () => (done('headers'), { content: [{ type: 'text', text: JSON.stringify(headers) }] }),
  );
  return server;
}

/** The resources, template and prompts of an upstream started with `items`. */
function addItems(server: McpServer, done: (name: string) => void): void {
  const text = (uri: URL, body: string) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: body }] });
  server.registerResource('readme', 'docs://readme', { title: 'Readme', description: 'The project readme.', mimeType: 'text/plain' }, async (uri) => {
    done(`read ${uri.href}`);
    return text(uri, 'hello from the readme');
  });
  server.registerResource('secret', 'docs://secret', { description: 'Something an admin will disable.' }, async (uri) => {
    done(`read ${uri.href}`);
    return text(uri, 'the secret resource');
  });
  server.registerResource('huge', 'docs://huge', { description: 'About 2 MB of text.' }, async (uri) => {
    done(`read ${uri.href}`);
    return text(uri, 'x'.repeat(2_000_000));
  });
  const ids = ['1', '12', '2'];
  server.registerResource(
    'note',
    new ResourceTemplate('notes://{id}', { list: undefined, complete: { id: (value) => (done('complete id'), ids.filter((v) => v.startsWith(value))) } }),
    { description: 'A note by its id.', mimeType: 'text/plain' },
    async (uri, { id }) => (done(`read ${uri.href}`), text(uri, `note number ${id}`)),
  );
  server.registerPrompt(
    'greet',
    { description: 'Greets someone.', argsSchema: { name: completable(z.string(), (value) => ['Ada', 'Alan'].filter((v) => v.startsWith(value))) } },
    async ({ name }) => (done('prompt greet'), { description: 'A greeting', messages: [{ role: 'user', content: { type: 'text', text: `Hello ${name}` } }] }),
  );
  server.registerPrompt('forbidden', { description: 'A prompt an admin will disable.' }, async () => {
    done('prompt forbidden');
    return { messages: [{ role: 'user', content: { type: 'text', text: 'forbidden words' } }] };
  });
}

export function startUpstream(port: number, path = '/mcp', options: { items?: boolean } = {}): Upstream {
  const seen: Record<string, string>[] = [];
  const calls: string[] = [];
  const http = Bun.serve({
    port,
    hostname: '127.0.0.1',
    async fetch(request) {
      const headers = Object.fromEntries([...request.headers.entries()].map(([k, v]) => [k.toLowerCase(), v]));
      seen.push(headers);
      if (new URL(request.url).pathname !== path) return new Response('not found', { status: 404 });
      const server = build(calls, headers);
      if (options.items) addItems(server, (name) => calls.push(name));
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      await server.connect(transport);
      return transport.handleRequest(request);
    },
  });
  return { url: `http://127.0.0.1:${http.port}${path}`, seen, calls, stop: () => http.stop(true) };
}

/**
 * An upstream MCP server that lists exactly the tools it is given, well-formed or not (the SDK's McpServer would
 * refuse to declare a malformed one): Streamable HTTP with JSON answers, stateless. initialize, the initialized
 * notification, tools/list (in pages of `pageSize`, with nextCursor) and tools/call (answers the name it was called by).
 */
export function startListingUpstream(tools: unknown[], pageSize = tools.length || 1): Upstream {
  const seen: Record<string, string>[] = [];
  const calls: string[] = [];
  const http = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      seen.push(Object.fromEntries([...request.headers.entries()].map(([k, v]) => [k.toLowerCase(), v])));
      if (request.method !== 'POST') return new Response(null, { status: 405 });
      const message = (await request.json()) as { id?: number; method: string; params?: any };
      if (message.id === undefined) return new Response(null, { status: 202 });
      const answer = (result: unknown) => Response.json({ jsonrpc: '2.0', id: message.id, result });
      if (message.method === 'initialize') {
        return answer({
          protocolVersion: message.params.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: 'listing-upstream', version: '1.0.0' },
        });
      }
      if (message.method === 'tools/list') {
        const start = Number(message.params?.cursor ?? 0);
        const end = start + pageSize;
        return answer({ tools: tools.slice(start, end), ...(end < tools.length ? { nextCursor: String(end) } : {}) });
      }
      if (message.method === 'tools/call') {
        calls.push(message.params.name);
        return answer({ content: [{ type: 'text', text: `called ${message.params.name}` }] });
      }
      return Response.json({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } });
    },
  });
  return { url: `http://127.0.0.1:${http.port}/mcp`, seen, calls, stop: () => http.stop(true) };
}
