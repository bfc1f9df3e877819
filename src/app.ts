/** The app factory: a web-standard fetch handler (served by Elysia) built from its dependencies, with no listen. */
import { handlers as allHandlers } from './handlers/index.ts';
import type { AppDeps } from './deps.ts';
import type { HandlerTable } from './handlers/context.ts';
import { buildRouter } from './http/router.ts';

export function buildApp(deps: AppDeps, handlers: HandlerTable = allHandlers) {
  return buildRouter(deps, handlers);
}
