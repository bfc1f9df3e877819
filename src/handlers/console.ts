/** The console's operations (tag `console`): its pages and assets, its session, sign-in and sign-out, on console/. */
import { assetReply, consolePage, landingPage } from '../console/assets.ts';
import { consoleContext } from '../console/context.ts';
import { passwordSignIn, type PasswordInput } from '../console/member-sign-in.ts';
import { sessionInfo, signOut } from '../console/session-routes.ts';
import { finishIdpSignIn, signInWithClient, startIdpSignIn, type ClientInput } from '../console/sign-in.ts';
import type { Handler, RequestContext } from './context.ts';

export const getLanding: Handler = ({ deps }) => landingPage(deps.config.publicUrl);
export const getConsolePage: Handler = () => consolePage();
export const getConsoleAsset: Handler = ({ deps, params }) => assetReply(deps.log, params.asset!);
export const getConsoleSession: Handler = ({ deps, request }) => sessionInfo(consoleContext(deps), request);
export const signInConsoleClient: Handler = ({ deps, request, body }: RequestContext<ClientInput>) => signInWithClient(consoleContext(deps), request, body);
export const signInConsolePassword: Handler = ({ deps, request, body }: RequestContext<PasswordInput>) => passwordSignIn(consoleContext(deps), request, body);
export const signOutConsole: Handler = ({ deps, request }) => signOut(consoleContext(deps), request);
export const startConsoleIdpSignIn: Handler = ({ deps, url }) => startIdpSignIn(consoleContext(deps), url);
export const finishConsoleIdpSignIn: Handler = ({ deps, request, url }) => finishIdpSignIn(consoleContext(deps), request, url);
