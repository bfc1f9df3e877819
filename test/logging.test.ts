// Issue 15: the logger writes JSON lines on a pipe and human-readable lines on a terminal (a real pseudo-terminal
// from util-linux `script`); secrets are redacted either way.
import { describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { verifies } from './requirements.ts';

const ROOT = join(import.meta.dir, '..');
const FIXTURE = 'test/fixtures/ops/log-lines.ts';
const hasScript = Bun.which('script') !== null;

describe('log output', () => {
  test('on a pipe: one JSON object per line, with level, time and message; secret keys redacted', async () => {
    verifies('OPS-LOG-LINE', 'OPS-LOG-NO-SECRETS');
    const proc = Bun.spawn([process.execPath, FIXTURE], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' });
    const out = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(0);
    const lines = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ level: 'info', message: 'request', request_id: 'fixture-1', status: 200, api_key: '[redacted]' });
    expect(lines[1]).toMatchObject({ level: 'error', message: 'something failed' });
    expect(typeof lines[0].time).toBe('string');
    expect(out).not.toContain('tgk_must_not_show');
  });

  test.skipIf(!hasScript)('on a terminal: human-readable lines (pino-pretty), not JSON; secret keys still redacted', async () => {
    verifies('OPS-LOG-LINE');
    if (!hasScript) console.warn('[skip] util-linux `script` is not installed: no pseudo-terminal to test with');
    const proc = Bun.spawn(['script', '-qec', `${process.execPath} ${FIXTURE}`, '/dev/null'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' });
    const out = (await new Response(proc.stdout).text()).replace(/\u001b\[[0-9;]*m/g, '');
    expect(await proc.exited).toBe(0);
    expect(out).toMatch(/INFO.*request/);
    expect(out).toMatch(/ERROR.*something failed/);
    expect(out).toContain('request_id: "fixture-1"');
    expect(out.trim().startsWith('{')).toBe(false);
    expect(out).not.toContain('tgk_must_not_show');
  });
});
