/**
 * The W3C Trace Context `traceparent` header, parsed exactly as the Recommendation says (version 00 and the
 * forward-compatible reading of a higher version); anything else is invalid and the caller starts a new trace.
 */

export interface TraceParent {
  traceId: string;
  parentId: string;
  /** The trace-flags byte (bit 0: sampled); bits this version does not define are carried, not interpreted. */
  flags: number;
}

/** HEXDIGLC: the spec allows lowercase hex only. */
const HEX_LC = /^[0-9a-f]+$/;
/** version "-" trace-id "-" parent-id "-" trace-flags: 2 + 1 + 32 + 1 + 16 + 1 + 2. */
const VERSION_00_LENGTH = 55;

function hexOf(value: string, length: number): string | null {
  return value.length === length && HEX_LC.test(value) ? value : null;
}

/**
 * The trace context of a `traceparent` value, or null when the value is invalid. A request carrying two headers
 * reaches us joined by ", " (Fetch `Headers`), which no valid value survives: the spec says to ignore both then.
 */
export function parseTraceparent(value: string | null): TraceParent | null {
  if (value === null || value.length < VERSION_00_LENGTH) return null;
  const version = hexOf(value.slice(0, 2), 2);
  // ff is forbidden; 00 is exactly 55 characters; a higher version may carry more, after a '-'.
  if (version === null || version === 'ff' || value[2] !== '-') return null;
  if (version === '00' ? value.length !== VERSION_00_LENGTH : value.length > VERSION_00_LENGTH && value[VERSION_00_LENGTH] !== '-') return null;
  const traceId = hexOf(value.slice(3, 35), 32);
  const parentId = hexOf(value.slice(36, 52), 16);
  const flags = hexOf(value.slice(53, 55), 2);
  if (traceId === null || value[35] !== '-' || parentId === null || value[52] !== '-' || flags === null) return null;
  // All-zero ids are the spec's invalid values.
  if (/^0+$/.test(traceId) || /^0+$/.test(parentId)) return null;
  return { traceId, parentId, flags: parseInt(flags, 16) };
}
