/**
 * Passkeys in the console (decision 0380): the table of a member's passkeys (name, created, last used, synced); "Your
 * passkeys", the signed-in member's own page, where they add one on this device (WebAuthn), rename and remove one; an
 * admin's section of a member's page (list, remove); and the join page's choice to register one with the password.
 */
import { useState } from 'preact/hooks';
import { call, client, rest, type Member, type Passkey } from './api.ts';
import { addOwnPasskey, listOwnPasskeys, passkeysSupported, removeOwnPasskey, renameOwnPasskey } from './passkey-api.ts';
import { DataTable, Empty, type Column } from './controls.tsx';
import { ErrorBox, Loading, Page, useAction, useLoad, when } from './kit.tsx';

interface TableProps {
  passkeys: Passkey[];
  onRemove: (p: Passkey) => void;
  /** Only the member's own passkeys can be renamed. */
  onRename?: (p: Passkey) => void;
  owner: string;
}

function PasskeyTable({ passkeys, onRemove, onRename, owner }: TableProps) {
  const columns: Column<Passkey>[] = [
    { key: 'name', label: 'Name', value: (p) => p.name },
    { key: 'created', label: 'Created', value: (p) => p.created_at, render: (p) => when(p.created_at) },
    { key: 'used', label: 'Last used', value: (p) => p.last_used_at ?? '', render: (p) => when(p.last_used_at) },
    { key: 'synced', label: 'Synced', value: (p) => (p.backed_up ? 'yes' : 'no') },
    {
      key: 'actions',
      label: 'Actions',
      value: () => '',
      render: (p) => (
        <>
          {onRename && (
            <button type="button" class="secondary" onClick={() => onRename(p)} aria-label={`Rename the passkey ${p.name}`}>
              Rename
            </button>
          )}
          <button type="button" class="danger" onClick={() => onRemove(p)} aria-label={`Remove the passkey ${p.name} of ${owner}`}>
            Remove
          </button>
        </>
      ),
    },
  ];
  return <DataTable caption="Passkeys" columns={columns} rows={passkeys} rowKey={(p) => p.id} rowTestId={(p) => `passkey-${p.name}`} />;
}

/** The signed-in member's passkeys: sign in with one instead of a password, here and from MCP clients. */
export function PasskeysPage() {
  const list = useLoad(listOwnPasskeys);
  const action = useAction();
  const [name, setName] = useState('');
  const add = (e: Event) => {
    e.preventDefault();
    const label = name.trim() || 'Passkey';
    action
      .run(() => addOwnPasskey(label), `Added the passkey “${label}”`)
      .then((added) => added && setName(''))
      .then(list.reload);
  };
  const remove = (p: Passkey) =>
    confirm(`Remove the passkey “${p.name}”? It signs you in no more, and sessions signed in with it end.`) &&
    action.run(() => removeOwnPasskey(p.id), `Removed “${p.name}”`).then(list.reload);
  const rename = (p: Passkey) => {
    const name = prompt(`A new name for the passkey “${p.name}”`, p.name)?.trim();
    if (name && name !== p.name) action.run(() => renameOwnPasskey(p.id, name), `Renamed to “${name}”`).then(list.reload);
  };
  const usable = passkeysSupported() && list.data?.available !== false;
  return (
    <Page title="Your passkeys">
      <p class="hint">
        A passkey signs you in with this device’s screen lock (a fingerprint, a face or a PIN) instead of your password: here, and when an MCP client asks you
        to sign in. No e-mail is asked for.
      </p>
      <ErrorBox error={action.error ?? list.error} />
      {list.data && !list.data.available && <p class="error">This gateway cannot offer passkeys: its public URL is an IP address, not a host name.</p>}
      {!passkeysSupported() && <p class="error">This browser cannot use passkeys.</p>}
      <form class="card" aria-label="Add a passkey" onSubmit={add}>
        <div class="field">
          <label for="passkey-name">Name (to tell your passkeys apart)</label>
          <input id="passkey-name" maxLength={100} placeholder="Passkey" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        <button type="submit" disabled={action.pending || !usable}>
          Add a passkey
        </button>
      </form>
      <Loading loading={list.loading && !list.data} />
      {list.data && list.data.passkeys.length === 0 && <Empty>No passkeys yet: add one above.</Empty>}
      {list.data && list.data.passkeys.length > 0 && <PasskeyTable passkeys={list.data.passkeys} onRemove={remove} onRename={rename} owner="you" />}
    </Page>
  );
}

/** An admin's view of a member's passkeys: names and dates, and removal (a lost device). */
export function MemberPasskeys({ member }: { member: Member }) {
  const list = useLoad(() => call(rest.listMemberPasskeys({ client, path: { memberId: member.id } })), [member.id]);
  const action = useAction();
  const remove = (p: Passkey) =>
    confirm(`Remove the passkey “${p.name}” of ${member.email}? It signs nobody in any more.`) &&
    action.run(() => call(rest.removeMemberPasskey({ client, path: { memberId: member.id, passkeyId: p.id } })), `Removed “${p.name}”`).then(list.reload);
  return (
    <section aria-labelledby="member-passkeys">
      <h2 id="member-passkeys">Passkeys</h2>
      <ErrorBox error={action.error ?? list.error} />
      <Loading loading={list.loading && !list.data} />
      {list.data && list.data.passkeys.length === 0 && <Empty>No passkeys: the member registers one from the console or an invitation link.</Empty>}
      {list.data && list.data.passkeys.length > 0 && <PasskeyTable passkeys={list.data.passkeys} onRemove={remove} owner={member.email} />}
    </section>
  );
}

/** The join page's choice: also register a passkey on this device while setting the password. */
export function JoinPasskeyChoice({ checked, onChange }: { checked: boolean; onChange: (checked: boolean) => void }) {
  if (!passkeysSupported()) return null;
  return (
    <div class="field">
      <label>
        <input type="checkbox" checked={checked} onChange={(e) => onChange(e.currentTarget.checked)} /> Also register a passkey on this device (sign in with its
        screen lock instead of the password)
      </label>
    </div>
  );
}
