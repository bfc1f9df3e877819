/** Webhook secrets and the signature headers of a delivery: the spec's X-Service-* set plus the Standard Webhooks set. */
import { createHmac, randomBytes } from 'node:crypto';

/** `whsec_` + base64 of 32 random bytes: the Standard Webhooks secret format, so its libraries take it as is. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * Headers of one attempt. `X-Service-Signature` is the spec's: lowercase hex HMAC-SHA256, keyed with the secret string
 * as given (UTF-8), over `<timestamp>.<raw body>`. `webhook-signature` is Standard Webhooks': `v1,<base64 HMAC>`
 * keyed with the base64-decoded part after `whsec_`, over `<event id>.<timestamp>.<raw body>`. Both timestamps are the
 * same Unix seconds of this attempt (a retry is signed afresh; the event id never changes).
 */
export function signatureHeaders(secret: string, eventId: string, eventType: string, body: string, timestampSec: number): Record<string, string> {
  const timestamp = String(timestampSec);
  const spec = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  const standardKey = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  const standard = createHmac('sha256', standardKey).update(`${eventId}.${timestamp}.${body}`).digest('base64');
  return {
    'content-type': 'application/json',
    'user-agent': 'Toolgate-Webhooks/1',
    'x-service-signature': `sha256=${spec}`,
    'x-service-timestamp': timestamp,
    'x-service-event': eventType,
    'webhook-id': eventId,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${standard}`,
  };
}
