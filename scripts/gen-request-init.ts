/**
 * A fix applied to @hey-api/client-fetch's generated runtime until upstream takes it (hey-api/hey-api#4177, PR #4178):
 * the runtime builds `new Request(url, { ...opts })` from its own options, so the per-call `client` option (and
 * `fetch`, `baseUrl`, serializers...) reach the RequestInit. Node and Bun ignore unknown keys; Deno reads `client`
 * as its Deno.HttpClient and throws. The fix passes only standard RequestInit fields. Each edit must match exactly
 * once, so a generator upgrade that moves the code fails `npm run gen` loudly instead of silently shipping the bug.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const HELPER = `
/** Added by scripts/gen-request-init.ts (hey-api/hey-api#4177): the standard RequestInit fields of \`options\`, so that
 * SDK options such as \`client\` never reach \`new Request\` (Deno reads \`client\` as its own Deno.HttpClient). */
const REQUEST_INIT_KEYS = ['method', 'headers', 'signal', 'redirect', 'cache', 'credentials', 'mode', 'referrer', 'referrerPolicy', 'integrity', 'keepalive', 'priority', 'duplex'] as const;
export function standardRequestInit<T extends object>(options: T): Pick<T, Extract<keyof T, (typeof REQUEST_INIT_KEYS)[number]>> {
  const init: Record<string, unknown> = {};
  for (const key of REQUEST_INIT_KEYS) if (key in options) init[key] = (options as Record<string, unknown>)[key];
  return init as Pick<T, Extract<keyof T, (typeof REQUEST_INIT_KEYS)[number]>>;
}
`;

const EDITS: { file: string; from: string; to: string }[] = [
  { file: 'core/utils.gen.ts', from: '\nexport function getValidRequestBody(', to: `${HELPER}\nexport function getValidRequestBody(` },
  {
    file: 'client/client.gen.ts',
    from: "import { getValidRequestBody } from '../core/utils.gen.ts';",
    to: "import { getValidRequestBody, standardRequestInit } from '../core/utils.gen.ts';",
  },
  { file: 'client/client.gen.ts', from: "      redirect: 'follow',\n      ...opts,\n", to: "      redirect: 'follow',\n      ...standardRequestInit(opts),\n" },
  {
    file: 'core/serverSentEvents.gen.ts',
    from: "import type { Config } from './types.gen.ts';",
    to: "import type { Config } from './types.gen.ts';\nimport { standardRequestInit } from './utils.gen.ts';",
  },
  {
    file: 'core/serverSentEvents.gen.ts',
    from: "          redirect: 'follow',\n          ...options,\n",
    to: "          redirect: 'follow',\n          ...standardRequestInit(options),\n",
  },
];

export function fixRequestInit(clientDir: string): void {
  for (const { file, from, to } of EDITS) {
    const path = join(clientDir, file);
    const text = readFileSync(path, 'utf8');
    const count = text.split(from).length - 1;
    if (count !== 1)
      throw new Error(`gen: the RequestInit fix expects ${JSON.stringify(from)} once in ${file}, found ${count} (did @hey-api/openapi-ts change?)`);
    writeFileSync(path, text.replace(from, to));
  }
}
