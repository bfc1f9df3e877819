/**
 * Passkeys in the console: the table of a member's passkeys (name, created, last used, synced), and "Your passkeys",
 * the signed-in member's own page, where they add one on this device (WebAuthn) and remove one.
 */
import { useState } from 'preact/hooks';
import { addOwnPasskey, listOwnPasskeys, passkeysSupported, removeOwnPasskey, type Passkey } from './api.ts';
import { DataTable, Empty, type Column } from './controls.tsx';
import { ErrorBox, Loading, Page, useAction, useLoad, when } from './kit.tsx';

export function PasskeyTable({ passkeys, onRemove, owner }: { passkeys: Passkey[]; onRemove: (p: Passkey) => void; owner: string }) {
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
        <button type="button" class="danger" onClick={() => onRemove(p)} aria-label={`Remove the passkey ${p.name} of ${owner}`}>
          Remove
        </button>
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
    confirm(`Remove the passkey “${p.name}”? It signs you in no more.`) && action.run(() => removeOwnPasskey(p.id), `Removed “${p.name}”`).then(list.reload);
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
      {list.data && list.data.passkeys.length > 0 && <PasskeyTable passkeys={list.data.passkeys} onRemove={remove} owner="you" />}
    </Page>
  );
}
