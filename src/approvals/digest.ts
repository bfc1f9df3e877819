/**
 * Binds a held call to what was asked: an HMAC over the approval's identity, its tool and its exact argument text.
 * Keyed with a key derived from the gateway's secret key, so someone who can write the store but does not hold the
 * key cannot alter a held call (or move it to another row, tool or org) and forge a matching digest.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

const VERSION = 'v1';

/** The digest key: HKDF-SHA256 of the gateway's secret key under a purpose label (never the encryption key itself). */
export function deriveApprovalDigestKey(secretKey: Uint8Array): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', secretKey, new Uint8Array(0), 'toolgate approval digest v1', 32));
}

export interface HeldCall {
  id: string;
  orgId: string;
  toolId: string;
  connectorId: string;
  toolName: string;
  argumentsJson: string;
  requesterKind: string;
  requesterId: string;
  /** The requester's attributes (row filters bind them); bound into the digest when there are any. */
  requesterAttributes?: Readonly<Record<string, string>>;
}

function attributesPart(attributes: HeldCall['requesterAttributes']): string[] {
  if (!attributes || Object.keys(attributes).length === 0) return [];
  return [
    JSON.stringify(
      Object.keys(attributes)
        .sort()
        .map((k) => [k, attributes[k]]),
    ),
  ];
}

export function heldCallDigest(key: Uint8Array, call: HeldCall): string {
  // A JSON array: unambiguous field boundaries whatever the values contain.
  const message = JSON.stringify([
    VERSION,
    call.id,
    call.orgId,
    call.toolId,
    call.connectorId,
    call.toolName,
    call.argumentsJson,
    call.requesterKind,
    call.requesterId,
    // Appended only when present, in key order: a held call without attributes keeps the digest it had before.
    ...attributesPart(call.requesterAttributes),
  ]);
  return `${VERSION}.${createHmac('sha256', key).update(message).digest('hex')}`;
}

export function heldCallDigestMatches(key: Uint8Array, call: HeldCall, digest: string): boolean {
  const expected = Buffer.from(heldCallDigest(key, call));
  const given = Buffer.from(digest);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
