/**
 * The SDK's error: a real `Error` (stack, `instanceof`, `cause`) that still carries the REST body. REST errors are
 * `{error, message}`; the token endpoint answers RFC 6749 `{error, error_description}`. Both keep their code in
 * `error`, so a ToolgateError also satisfies the generated `Error`/`OAuthError` types where the SDK returns one.
 */
export class ToolgateError extends Error {
  override name = 'ToolgateError';
  /** The HTTP status, or 0 when no response arrived (`error` is then `timeout` or `network_error`). */
  readonly status: number;
  /** The machine-readable code (`validation_error`, `not_found`, `invalid_client`, ...). */
  readonly error: string;
  /** The body exactly as the gateway sent it (parsed JSON, or the text when it was not JSON). */
  readonly body: unknown;

  constructor(status: number, body: unknown, options?: { cause?: unknown }) {
    const fields = body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
    const code = typeof fields.error === 'string' ? fields.error : `http_${status}`;
    const text =
      typeof fields.message === 'string'
        ? fields.message
        : typeof fields.error_description === 'string'
          ? fields.error_description
          : typeof body === 'string' && body
            ? body
            : `HTTP ${status}`;
    super(text, options);
    this.status = status;
    this.error = code;
    this.body = body;
  }
}
