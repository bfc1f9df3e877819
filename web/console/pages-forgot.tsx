/**
 * "Forgot password?" (#/forgot or #/forgot/<org>, decision 0386): the org and the e-mail; the gateway mails a one-time
 * link to an active member and answers the same for anyone, so the page says only what the answer says. Without
 * mail on the gateway the answer says to ask an admin.
 */
import { useState } from 'preact/hooks';
import { call, client, rest } from './api.ts';
import { ErrorBox, useAction } from './kit.tsx';

export function ForgotPasswordPage({ org: initialOrg }: { org: string }) {
  const [org, setOrg] = useState(initialOrg);
  const [email, setEmail] = useState('');
  const [answer, setAnswer] = useState<string | null>(null);
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    action.run(async () => {
      const taken = await call(rest.requestMemberPasswordReset({ client, body: { org: org.trim(), email: email.trim() } }));
      setAnswer(taken.message);
    });
  };
  return (
    <main class="signin">
      <h1>Forgot password</h1>
      {answer ? (
        <p role="status" class="card">
          {answer}
        </p>
      ) : (
        <form class="card" aria-label="Ask for a password-reset link" onSubmit={submit}>
          <label for="forgot-org">Org</label>
          <input
            id="forgot-org"
            required
            pattern="[a-z0-9][a-z0-9\-]*"
            value={org}
            onInput={(e) => setOrg(e.currentTarget.value)}
            autoComplete="organization"
          />
          <label for="forgot-email">E-mail</label>
          <input
            id="forgot-email"
            type="email"
            required
            maxLength={320}
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
            autoComplete="username"
          />
          <ErrorBox error={action.error} />
          <button type="submit" disabled={action.pending}>
            {action.pending ? 'Sending…' : 'Mail me a link'}
          </button>
        </form>
      )}
      <p>
        <a href="#/overview">Back to sign-in</a>
      </p>
    </main>
  );
}
