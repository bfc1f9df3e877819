/** The console's shell: the session, the sign-in form, the navigation (hash routes) and the page for each route. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { loadSession, onSignedOut, pollPendingApprovals, signInWithClient, signInWithPassword, signOut, type SessionInfo } from './api.ts';
import { passkeysSupported, signInWithPasskey } from './passkey-api.ts';
import { Toasts } from './controls.tsx';
import { can, ErrorBox, useAction, type PageProps, type Role } from './kit.tsx';
import { ConnectPage, PlaygroundPage } from './pages-agent.tsx';
import { OverviewPage, ToolsPage } from './pages-build.tsx';
import { ConnectorsPage } from './pages-connectors.tsx';
import { AuditPage } from './pages-audit.tsx';
import { ApprovalsPage, CredentialsPage } from './pages-operate.tsx';
import { BillingPage, IdpPage, WebhooksPage } from './pages-org.tsx';
import { SignedInAgentsPage } from './pages-signin.tsx';
import { JoinPage, MembersPage } from './pages-members.tsx';
import { PasskeysPage } from './passkeys.tsx';
import { ForgotPasswordPage } from './pages-forgot.tsx';

interface Route {
  name: string;
  title: string;
  /** The role the page needs, or `member`: any member's session, whatever its roles. */
  role: Role | 'member';
  view: (props: PageProps) => preact.JSX.Element;
}

/** Only the pages the session's role may use are listed (REST enforces the same policies). */
const ROUTES: Route[] = [
  { name: 'overview', title: 'Overview', role: 'contributor', view: OverviewPage },
  { name: 'connectors', title: 'Connectors', role: 'contributor', view: ConnectorsPage },
  { name: 'tools', title: 'Tools', role: 'contributor', view: ToolsPage },
  { name: 'approvals', title: 'Approvals', role: 'contributor', view: ApprovalsPage },
  { name: 'audit', title: 'Audit', role: 'contributor', view: AuditPage },
  { name: 'playground', title: 'Tool playground', role: 'admin', view: PlaygroundPage },
  { name: 'connect', title: 'Connect an agent', role: 'contributor', view: ConnectPage },
  { name: 'credentials', title: 'API keys & OAuth clients', role: 'admin', view: CredentialsPage },
  { name: 'members', title: 'Members', role: 'admin', view: MembersPage },
  { name: 'agents', title: 'Signed-in agents', role: 'admin', view: SignedInAgentsPage },
  { name: 'idp', title: 'Identity provider', role: 'admin', view: IdpPage },
  { name: 'webhooks', title: 'Webhooks', role: 'admin', view: WebhooksPage },
  { name: 'billing', title: 'Billing', role: 'finance', view: BillingPage },
  { name: 'passkeys', title: 'Your passkeys', role: 'member', view: PasskeysPage },
];

const routeAllowed = (session: SessionInfo, route: Route) => (route.role === 'member' ? session.kind === 'member' : can(session, route.role));

const routeParts = () => location.hash.replace(/^#\/?/, '').split('?')[0]!.split('/');
const routeName = () => routeParts()[0] ?? '';

/** The pending approvals, polled every 5 s with an ETag (a 304 while nothing changed). */
function usePending(enabled: boolean): number | null {
  const [count, setCount] = useState<number | null>(null);
  useEffect(() => {
    if (!enabled) return;
    let live = true;
    const poll = () =>
      pollPendingApprovals().then(
        (n) => live && n !== null && setCount(n),
        () => {},
      );
    poll();
    const timer = setInterval(poll, 5000);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [enabled]);
  return count;
}

/**
 * A member's sign-in: the org, e-mail and password, or a passkey (no org or e-mail: the passkey names its member). The
 * same limits as the MCP sign-in page.
 */
function PasswordSignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [org, setOrg] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    if (await action.run(() => signInWithPassword(org.trim(), email.trim(), password))) onSignedIn();
  };
  const passkey = async () => {
    if (await action.run(signInWithPasskey)) onSignedIn();
  };
  return (
    <section aria-labelledby="member-title" class="card">
      <h2 id="member-title">Sign in</h2>
      <form onSubmit={submit}>
        <label for="member-org">Org</label>
        <input id="member-org" required pattern="[a-z0-9][a-z0-9\-]*" value={org} onInput={(e) => setOrg(e.currentTarget.value)} autoComplete="organization" />
        <label for="member-email-in">E-mail</label>
        <input id="member-email-in" type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} autoComplete="username" />
        <label for="member-password">Password</label>
        <input
          id="member-password"
          type="password"
          required
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
          autoComplete="current-password"
        />
        <ErrorBox error={action.error} />
        <button type="submit" disabled={action.pending}>
          {action.pending ? 'Signing in…' : 'Sign in with password'}
        </button>
        <a href={`#/forgot/${encodeURIComponent(org.trim())}`}>Forgot password?</a>
      </form>
      {passkeysSupported() && (
        <p>
          <button type="button" class="secondary" onClick={passkey} disabled={action.pending}>
            Sign in with a passkey
          </button>
        </p>
      )}
    </section>
  );
}

function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [clientId, setClientId] = useState('');
  const [clientSecret, setClientSecret] = useState('');
  const [org, setOrg] = useState('');
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    if (await action.run(() => signInWithClient(clientId, clientSecret))) onSignedIn();
  };
  const back = routeName() || 'overview';
  return (
    <main class="signin">
      <h1>Toolgate console</h1>
      <PasswordSignIn onSignedIn={onSignedIn} />
      <section aria-labelledby="idp-title" class="card">
        <h2 id="idp-title">Sign in with your identity provider</h2>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            // A navigation, not a form submission: the page's CSP (form-action 'self') would stop the redirect to the IdP.
            location.assign(`/console/auth/idp?${new URLSearchParams({ org: org.trim(), return: back })}`);
          }}
        >
          <label for="org">Org (its slug, as in the MCP endpoint URL)</label>
          <input
            id="org"
            name="org"
            required
            pattern="[a-z0-9][a-z0-9\-]*"
            value={org}
            onInput={(e) => setOrg(e.currentTarget.value)}
            autoComplete="organization"
          />
          <button type="submit">Continue to the identity provider</button>
        </form>
      </section>
      {/* For automation and first set-up: behind a link, as people sign in above. */}
      <details class="card">
        <summary>Sign in with an OAuth client</summary>
        <p class="hint">A client of the org with the org:manage scope (the demo prints where its credentials are).</p>
        <form onSubmit={submit}>
          <label for="client-id">Client id</label>
          <input id="client-id" required value={clientId} onInput={(e) => setClientId(e.currentTarget.value)} autoComplete="off" />
          <label for="client-secret">Client secret</label>
          <input id="client-secret" type="password" required value={clientSecret} onInput={(e) => setClientSecret(e.currentTarget.value)} autoComplete="off" />
          <ErrorBox error={action.error} />
          <button type="submit" disabled={action.pending}>
            {action.pending ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
      </details>
    </main>
  );
}

/** The first stop for keyboard users: focuses the content at once (the address stays on the page, no #main in the history). */
function SkipLink() {
  return (
    // biome-ignore lint/a11y/useValidAnchor: a skip link is a link to #main (it works without script); the handler only keeps #main out of the hash router
    <a
      class="skip"
      href="#main"
      onClick={(e) => {
        e.preventDefault();
        document.getElementById('main')?.focus();
      }}
    >
      Skip to content
    </a>
  );
}

function Shell({ session, onSignOut }: { session: SessionInfo; onSignOut: () => void }) {
  const [parts, setParts] = useState(routeParts());
  useEffect(() => {
    let last = location.hash;
    const follow = () => {
      // The skip link (#main) is no route: the page stays, the content takes the focus.
      if (location.hash === '#main') {
        history.replaceState(null, '', last);
        document.getElementById('main')?.focus();
        return;
      }
      last = location.hash;
      setParts(routeParts());
    };
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  const allowed = ROUTES.filter((r) => routeAllowed(session, r));
  const route = allowed.find((r) => r.name === parts[0]) ?? allowed[0];
  const pending = usePending(can(session, 'contributor'));
  const out = useAction();
  return (
    <div class="shell">
      <SkipLink />
      <nav aria-label="Console">
        <p class="brand">Toolgate</p>
        <p class="org" data-testid="org-name" title={`${session.org_slug} (${session.org_id})`}>
          {session.org_name}
        </p>
        <ul>
          {allowed.map((r) => (
            <li key={r.name}>
              <a href={`#/${r.name}`} aria-current={r === route ? 'page' : undefined}>
                {r.title}
                {r.name === 'approvals' && pending ? (
                  <span class="badge" data-testid="pending-badge">
                    {pending}
                    <span class="sr-only"> pending</span>
                  </span>
                ) : null}
              </a>
            </li>
          ))}
        </ul>
        <div class="who">
          <p>
            Signed in as{' '}
            <strong data-testid="actor-name" title={session.actor}>
              {session.actor_name}
            </strong>
            <span class="sr-only" data-testid="actor">
              {session.actor}
            </span>
            <br />
            <span data-testid="roles">{session.org_level ? 'org level (all roles)' : session.roles.join(', ') || 'no role'}</span>
          </p>
          <button type="button" class="secondary" onClick={() => out.run(signOut).then(onSignOut)}>
            Sign out
          </button>
        </div>
      </nav>
      <main id="main" tabIndex={-1}>
        {route ? (
          <route.view session={session} id={route.name === parts[0] ? parts[1] : undefined} />
        ) : (
          <p class="error">This account has no role that the console can show pages for.</p>
        )}
      </main>
      <Toasts />
    </div>
  );
}

function App() {
  const [session, setSession] = useState<SessionInfo | null | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const refresh = () => loadSession().then(setSession, setError);
  useEffect(() => {
    refresh();
    onSignedOut(() => setSession(null));
  }, []);
  // Signed out, the route still picks a page (#/forgot): follow the address bar.
  const [, setRoute] = useState(location.hash);
  useEffect(() => {
    const follow = () => setRoute(location.hash);
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  // An invitation or reset link: the token is taken out of the address bar at once.
  const [joinToken, setJoinToken] = useState(() => (routeName() === 'join' ? (routeParts()[1] ?? '') : ''));
  useEffect(() => {
    if (joinToken) history.replaceState(null, '', `${location.pathname}#/join`);
  }, []);
  if (joinToken)
    return (
      <JoinPage
        token={joinToken}
        onDone={() => {
          history.replaceState(null, '', `${location.pathname}#/overview`);
          setJoinToken('');
          refresh();
        }}
      />
    );
  if (error) return <ErrorBox error={error} />;
  if (session === undefined) return <p class="loading">Loading…</p>;
  if (session === null && routeName() === 'forgot') return <ForgotPasswordPage org={decodeURIComponent(routeParts()[1] ?? '')} />;
  if (session === null) return <SignIn onSignedIn={refresh} />;
  return <Shell session={session} onSignOut={() => setSession(null)} />;
}

render(<App />, document.getElementById('app')!);
