/** A credential's attributes (what row filters bind as `:caller.<name>`): shown, and set by an admin (issue 38 item 6). */
import { useState } from 'preact/hooks';
import { schemas } from '../../generated/contract-schemas.ts';
import { schemaError, type FieldSchema } from './controls.tsx';

const ATTRS = schemas.CallerAttributes as unknown as { maxProperties: number; propertyNames: FieldSchema; additionalProperties: FieldSchema };

type Pair = { name: string; value: string };

/** The problem with the pairs as typed (names by the contract's pattern, values by its length, no name twice), or null. */
function pairsError(pairs: Pair[]): string | null {
  if (pairs.length > ATTRS.maxProperties) return `At most ${ATTRS.maxProperties} attributes.`;
  const seen = new Set<string>();
  for (const p of pairs) {
    if (p.name === '') return 'Every attribute needs a name.';
    const bad = schemaError(ATTRS.propertyNames, p.name) ?? schemaError(ATTRS.additionalProperties, p.value);
    if (bad) return `${p.name}: ${bad}`;
    if (seen.has(p.name)) return `${p.name} is given twice.`;
    seen.add(p.name);
  }
  return null;
}

/** The attributes as a list; `none` when there are none. */
export function AttributesList({ attributes }: { attributes: Record<string, string> | undefined }) {
  const entries = Object.entries(attributes ?? {}).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return <span data-testid="credential-attributes">none</span>;
  return (
    <ul class="plain" data-testid="credential-attributes">
      {entries.map(([name, value]) => (
        <li key={name}>
          <code>{name}</code> = <code>{value}</code>
        </li>
      ))}
    </ul>
  );
}

/**
 * The editor: one name/value row per attribute, added and removed, checked against the contract as typed; saving
 * replaces the credential's whole set.
 */
export function AttributesEditor({
  attributes,
  pending,
  onSave,
}: {
  attributes: Record<string, string> | undefined;
  pending: boolean;
  onSave: (attributes: Record<string, string>) => void;
}) {
  const [pairs, setPairs] = useState<Pair[]>(Object.entries(attributes ?? {}).map(([name, value]) => ({ name, value })));
  const problem = pairsError(pairs);
  const set = (i: number, pair: Pair) => setPairs(pairs.map((p, k) => (k === i ? pair : p)));
  const save = (e: Event) => {
    e.preventDefault();
    if (!problem) onSave(Object.fromEntries(pairs.map((p) => [p.name, p.value])));
  };
  return (
    <form onSubmit={save} data-testid="attributes-editor" aria-labelledby="attributes-heading">
      <h2 id="attributes-heading">Attributes</h2>
      <p class="hint">
        Row filters bind these as <code>:caller.&lt;name&gt;</code>. A call that reads a table whose filter names an attribute this credential lacks is refused,
        naming it. Saving replaces every attribute; calls use the new ones at once.
      </p>
      {pairs.map((p, i) => (
        <div class="row" key={i}>
          <label for={`attr-name-${i}`}>Name</label>
          <input id={`attr-name-${i}`} value={p.name} maxLength={64} onInput={(e) => set(i, { ...p, name: e.currentTarget.value })} />
          <label for={`attr-value-${i}`}>Value</label>
          <input id={`attr-value-${i}`} value={p.value} maxLength={256} onInput={(e) => set(i, { ...p, value: e.currentTarget.value })} />
          <button type="button" aria-label={`Remove attribute ${p.name || i + 1}`} onClick={() => setPairs(pairs.filter((_, k) => k !== i))}>
            Remove
          </button>
        </div>
      ))}
      {problem && (
        <p class="error" role="alert" data-testid="attributes-error">
          {problem}
        </p>
      )}
      <button type="button" onClick={() => setPairs([...pairs, { name: '', value: '' }])} disabled={pairs.length >= ATTRS.maxProperties}>
        Add attribute
      </button>{' '}
      <button type="submit" disabled={pending || problem !== null}>
        Save attributes
      </button>
    </form>
  );
}
