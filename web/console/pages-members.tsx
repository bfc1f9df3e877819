/**
 * "Members": the people of the org kept by the gateway (beside its IdP): invite by e-mail (the one-time link shown
 * once), change roles, suspend and resume, a password-reset link, remove; one member's attributes (#/members/<id>);
 * and, with an IdP, how people sign in to the org's MCP authorization server. Also the page a link opens
 * (#/join/<token>), where the person sets a password.
 */
import { useState } from 'preact/hooks';
import { call, client, rest, type Member, type MemberLink, type PeopleSignIn } from './api.ts';
import { AttributesEditor, AttributesList } from './attributes.tsx';
import { DataTable, Empty, type Column } from './controls.tsx';
import { passkeyForLink } from './passkey-api.ts';
import { JoinPasskeyChoice, MemberPasskeys } from './passkeys.tsx';
import { ErrorBox, Loading, Page, SecretOnce, useAction, useLoad, when, type PageProps } from './kit.tsx';

const ROLES = ['admin', 'contributor', 'finance'] as const;
type MemberRole = (typeof ROLES)[number];

function RoleBoxes({ roles, onChange, idPrefix }: { roles: MemberRole[]; onChange: (roles: MemberRole[]) => void; idPrefix: string }) {
  return (
    <fieldset class="inline">
      <legend>Roles</legend>
      {ROLES.map((r) => (
        <label key={r} for={`${idPrefix}-${r}`}>
          <input
            id={`${idPrefix}-${r}`}
            type="checkbox"
            checked={roles.includes(r)}
            onChange={(e) => onChange(e.currentTarget.checked ? [...roles, r] : roles.filter((x) => x !== r))}
          />{' '}
          {r}
        </label>
      ))}
    </fieldset>
  );
}

function InviteForm({ onInvited }: { onInvited: (link: MemberLink, email: string) => void }) {
  const [email, setEmail] = useState('');
  const [roles, setRoles] = useState<MemberRole[]>(['contributor']);
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    action.run(async () => {
      const { invitation } = await call(rest.inviteMember({ client, body: { email: email.trim(), roles } }));
      onInvited(invitation, email.trim());
      setEmail('');
    }, `Invited ${email.trim()}`);
  };
  return (
    <form class="card" aria-label="Invite a member" onSubmit={submit}>
      <div class="field">
        <label for="member-email">E-mail</label>
        <input id="member-email" type="email" required maxLength={320} value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
      </div>
      <RoleBoxes roles={roles} onChange={setRoles} idPrefix="invite-role" />
      <ErrorBox error={action.error} />
      <button type="submit" disabled={action.pending || !email.trim()}>
        Invite
      </button>
    </form>
  );
}

function MembersTable({ members, act }: { members: Member[]; act: (m: Member, change: 'suspend' | 'resume' | 'link' | 'remove') => void }) {
  const columns: Column<Member>[] = [
    { key: 'email', label: 'E-mail', value: (m) => m.email, render: (m) => <a href={`#/members/${m.id}`}>{m.email}</a> },
    { key: 'name', label: 'Name', value: (m) => m.display_name ?? '' },
    { key: 'roles', label: 'Roles', value: (m) => m.roles.join(', ') || '—' },
    { key: 'status', label: 'Status', value: (m) => m.status, render: (m) => <span class={`status status-${m.status}`}>{m.status}</span> },
    { key: 'last', label: 'Last sign-in', value: (m) => m.last_sign_in_at ?? '', render: (m) => when(m.last_sign_in_at) },
    {
      key: 'actions',
      label: 'Actions',
      value: () => '',
      render: (m) => (
        <span class="actions">
          {m.status === 'active' && (
            <button type="button" onClick={() => act(m, 'suspend')} aria-label={`Suspend ${m.email}`}>
              Suspend
            </button>
          )}
          {m.status === 'suspended' && (
            <button type="button" onClick={() => act(m, 'resume')} aria-label={`Resume ${m.email}`}>
              Resume
            </button>
          )}
          {m.status !== 'suspended' && (
            <button
              type="button"
              onClick={() => act(m, 'link')}
              aria-label={`${m.status === 'invited' ? 'New invitation link for' : 'Password-reset link for'} ${m.email}`}
            >
              {m.status === 'invited' ? 'New invitation link' : 'Password-reset link'}
            </button>
          )}
          <button type="button" class="danger" onClick={() => act(m, 'remove')} aria-label={`Remove ${m.email}`}>
            Remove
          </button>
        </span>
      ),
    },
  ];
  return <DataTable caption="Members" columns={columns} rows={members} rowKey={(m) => m.id} rowTestId={(m) => `member-${m.email}`} />;
}

const MODES: Record<PeopleSignIn, string> = {
  idp_only: 'Only the identity provider',
  members_only: 'Only members (e-mail and password)',
  both: 'Both: the person chooses',
};

function MemberDetail({ id }: { id: string }) {
  const list = useLoad(() => call(rest.listMembers({ client })), [id]);
  const action = useAction();
  const member = list.data?.members.find((m) => m.id === id);
  const [roles, setRoles] = useState<MemberRole[] | null>(null);
  if (!member) return <Page title="Member">{list.data ? <Empty>No such member.</Empty> : <Loading loading />}</Page>;
  const shown = roles ?? (member.roles as MemberRole[]);
  const save = (body: { roles?: MemberRole[]; attributes?: Record<string, string> }) =>
    action.run(() => call(rest.updateMember({ client, path: { memberId: id }, body })), `Saved ${member.email}`).then(list.reload);
  return (
    <Page title={member.email}>
      <p>
        <a href="#/members">All members</a>
      </p>
      <ErrorBox error={action.error ?? list.error} />
      <p>
        Status <strong>{member.status}</strong>; last sign-in {when(member.last_sign_in_at)}.
      </p>
      <form
        class="card"
        aria-label="Roles"
        onSubmit={(e) => {
          e.preventDefault();
          save({ roles: shown });
        }}
      >
        <RoleBoxes roles={shown} onChange={setRoles} idPrefix="member-role" />
        <button type="submit" disabled={action.pending}>
          Save roles
        </button>
      </form>
      <AttributesList attributes={member.attributes} />
      <AttributesEditor attributes={member.attributes} pending={action.pending} onSave={(attributes) => save({ attributes })} />
      <MemberPasskeys member={member} />
    </Page>
  );
}

export function MembersPage({ id }: PageProps) {
  const list = useLoad(() => call(rest.listMembers({ client })));
  const action = useAction();
  const [shown, setShown] = useState<{ link: MemberLink; email: string } | null>(null);
  if (id) return <MemberDetail id={id} />;
  const act = (m: Member, change: 'suspend' | 'resume' | 'link' | 'remove') => {
    if (change === 'remove' && !confirm(`Remove ${m.email}? Their console sessions and MCP sign-ins end.`)) return;
    if (change === 'suspend' && !confirm(`Suspend ${m.email}? Their console sessions and MCP sign-ins end at once.`)) return;
    const run = {
      suspend: () => call(rest.updateMember({ client, path: { memberId: m.id }, body: { status: 'suspended' } })),
      resume: () => call(rest.updateMember({ client, path: { memberId: m.id }, body: { status: 'active' } })),
      remove: () => call(rest.removeMember({ client, path: { memberId: m.id } })),
      link: async () => setShown({ link: await call(rest.createMemberLink({ client, path: { memberId: m.id } })), email: m.email }),
    }[change];
    action.run(run, change === 'link' ? undefined : `${m.email}: ${change === 'remove' ? 'removed' : `${change}d`}`).then(list.reload);
  };
  const setMode = (mode: PeopleSignIn) => action.run(() => call(rest.setPeopleSignIn({ client, body: { people_sign_in: mode } })), 'Saved').then(list.reload);
  const members = list.data?.members ?? [];
  return (
    <Page title="Members">
      <p class="hint">
        People who sign in with an e-mail and a password, to this console and from MCP clients, with the roles given here. An invitation or reset link is shown
        once and works once, for 7 days.
      </p>
      <ErrorBox error={action.error ?? list.error} />
      {shown && (
        <SecretOnce
          label={shown.link.purpose === 'invitation' ? 'Invitation link' : 'Password-reset link'}
          value={shown.link.url}
          extra={`For ${shown.email}, until ${when(shown.link.expires_at)}. Send it to them yourself.`}
          onDone={() => setShown(null)}
        />
      )}
      <InviteForm onInvited={(link, email) => (setShown({ link, email }), list.reload())} />
      <Loading loading={list.loading && !list.data} />
      {list.data && members.length === 0 && <Empty>No members yet: invite the first above.</Empty>}
      {members.length > 0 && <MembersTable members={members} act={act} />}
      {list.data?.idp_configured && (
        <section class="card" aria-labelledby="people-sign-in">
          <h2 id="people-sign-in">Sign-in from MCP clients</h2>
          <label for="people-mode">People sign in with</label>
          <select id="people-mode" value={list.data.people_sign_in} onChange={(e) => setMode(e.currentTarget.value as PeopleSignIn)}>
            {(Object.keys(MODES) as PeopleSignIn[]).map((m) => (
              <option key={m} value={m}>
                {MODES[m]}
              </option>
            ))}
          </select>
        </section>
      )}
    </Page>
  );
}

/**
 * The page an invitation or reset link opens (#/join/<token>), signed in or not: the person sets a password. The token
 * leaves the address bar at once (it is in the fragment: no server, proxy or log ever saw it).
 */
export function JoinPage({ token, onDone }: { token: string; onDone: () => void }) {
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const [name, setName] = useState('');
  const [withPasskey, setWithPasskey] = useState(false);
  const [done, setDone] = useState<{ email: string; org_slug: string } | null>(null);
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    action.run(async () => {
      const passkey = withPasskey ? { passkey: { name: 'Passkey', response: await passkeyForLink(token) } } : {};
      const body = { token, password, ...(name.trim() ? { display_name: name.trim() } : {}), ...passkey };
      setDone(await call(rest.acceptMemberLink({ client, body })));
    });
  };
  if (done)
    return (
      <main class="signin">
        <h1>Password set</h1>
        <p>
          Sign in to <strong>{done.org_slug}</strong> as <strong>{done.email}</strong> with your new password.
        </p>
        <button type="button" onClick={onDone}>
          Continue to sign in
        </button>
      </main>
    );
  const mismatch = again !== '' && again !== password;
  return (
    <main class="signin">
      <h1>Set your password</h1>
      <form class="card" aria-label="Set your password" onSubmit={submit}>
        <div class="field">
          <label for="join-name">Your name (optional)</label>
          <input id="join-name" maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} autoComplete="name" />
        </div>
        <div class="field">
          <label for="join-password">New password (at least 10 characters)</label>
          <input
            id="join-password"
            type="password"
            required
            minLength={10}
            maxLength={256}
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
            autoComplete="new-password"
          />
        </div>
        <div class="field">
          <label for="join-again">The same password again</label>
          <input id="join-again" type="password" required value={again} onInput={(e) => setAgain(e.currentTarget.value)} autoComplete="new-password" />
        </div>
        <JoinPasskeyChoice checked={withPasskey} onChange={setWithPasskey} />
        {mismatch && <p class="error">The two passwords differ.</p>}
        <ErrorBox error={action.error} />
        <button type="submit" disabled={action.pending || mismatch || password.length < 10}>
          Set password
        </button>
      </form>
    </main>
  );
}
