/**
 * Contract tests run against the spec: every response the suite receives from a gateway (through
 * startTestGateway's `handle`, or `contractFetch` against a real server) is checked against openapi.yaml with
 * openapi-backend, and a mismatch throws, which fails the test that made the request. Checked per response:
 * - the status is declared for the operation (exactly, as NXX, or as `default`): an undeclared status fails;
 * - the media type is one the response declares, and a response that declares no content has an empty body;
 * - a JSON body matches the declared schema (openapi-backend's validateResponse for that status);
 * - every header the response declares is present and matches its schema (validateResponseHeaders, superset).
 * Requests that match no operation (the router's JSON 404 and 405) are outside the contract and pass unchecked.
 */
import { OpenAPIBackend, type Document, type Operation } from 'openapi-backend';
import addFormats from 'ajv-formats';
import openapiDocument from '../../generated/openapi.json' with { type: 'json' };

type ResponseObject = { content?: Record<string, unknown>; headers?: Record<string, unknown> };

/** generated/openapi.json is openapi.yaml as JSON (`npm run gen:check` keeps them equal); cloned, as init dereferences it. */
const backend = new OpenAPIBackend({
  definition: structuredClone(openapiDocument) as unknown as Document,
  strict: true,
  quick: false,
  // The contract's formats (date-time, uuid, uri, email) are checked, as the app's generated validators check them.
  customizeAjv: (ajv) => addFormats(ajv as never) as never,
});
// openapi-backend checks a definition against the OpenAPI 3.0 meta-schema only (`{ version: 3 }`), which rejects
// openapi.yaml's 3.1 schemas (`const`, type arrays). Its response validators (Ajv) handle those; the check is skipped.
backend.validateDefinition = () => backend.document;
await backend.init();

export class ContractViolation extends Error {
  override name = 'ContractViolation';
}

function declaredStatus(operation: Operation, status: number): string | null {
  const responses = operation.responses ?? {};
  for (const key of [String(status), `${Math.floor(status / 100)}XX`, 'default']) if (Object.hasOwn(responses, key)) return key;
  return null;
}

function mediaMatches(declared: string, actual: string): boolean {
  if (declared === actual || declared === '*/*') return true;
  return declared.endsWith('/*') && actual.startsWith(declared.slice(0, -1));
}

const describeErrors = (errors: { instancePath?: string; message?: string }[] | null | undefined) =>
  (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`).join('; ');

/** The ways `response` departs from the contract of the operation `method url` matches; empty when it conforms. */
export async function contractViolations(method: string, url: string, response: Response): Promise<string[]> {
  const { pathname, searchParams } = new URL(url);
  const operation = backend.matchOperation({ method, path: pathname, headers: {}, query: Object.fromEntries(searchParams) });
  if (!operation) return [];
  const where = `${operation.operationId} (${method} ${pathname}) ${response.status}`;
  const statusKey = declaredStatus(operation, response.status);
  if (!statusKey) return [`${where}: status ${response.status} is not declared`];
  const declared = (operation.responses as Record<string, ResponseObject>)[statusKey]!;
  const problems: string[] = [];

  const headers = Object.fromEntries(response.headers);
  const headerResult = backend.validateResponseHeaders(headers, operation, { statusCode: response.status, setMatchType: 'superset' as never });
  if (!headerResult.valid) problems.push(`headers: ${describeErrors(headerResult.errors)}`);

  const text = await response.clone().text();
  const mediaTypes = Object.keys(declared.content ?? {});
  const actual = (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (mediaTypes.length === 0) {
    if (text !== '') problems.push(`a body (${actual || 'no content-type'}) where the response declares none`);
  } else if (!mediaTypes.some((m) => mediaMatches(m, actual))) {
    problems.push(`content-type ${actual || '(none)'} is not one of ${mediaTypes.join(', ')}`);
  } else if (actual === 'application/json') {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      problems.push('the body is not JSON');
    }
    if (body !== undefined) {
      const result = backend.validateResponse(body, operation, response.status);
      if (!result.valid) problems.push(`body: ${describeErrors(result.errors)}`);
    }
  }
  return problems.map((p) => `${where}: ${p}`);
}

/** Throws a ContractViolation naming every departure of `response` from the contract. */
async function assertConforms(method: string, url: string, response: Response): Promise<Response> {
  const problems = await contractViolations(method, url, response);
  if (problems.length) throw new ContractViolation(`response departs from openapi.yaml:\n  ${problems.join('\n  ')}`);
  return response;
}

/** Wraps a gateway's `handle` so that every response is checked against the contract. */
export function contractChecked(handle: (request: Request) => Promise<Response>): (request: Request) => Promise<Response> {
  return async (request) => assertConforms(request.method, request.url, await handle(request));
}

/** `fetch` for suites that talk to a real server (and for the generated SDK client): every response is checked. */
export const contractFetch = Object.assign(
  async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    return assertConforms(request.method, request.url, await fetch(request));
  },
  { preconnect: fetch.preconnect },
) as typeof fetch;
