/** Starts gateway processes (`bun src/main.ts`) on a free port and stops them: the lifecycle test and scripts/scale-out.ts. */
import { join } from 'node:path';
import type { Subprocess } from 'bun';

export const ROOT = join(import.meta.dir, '..', '..');

export interface Instance {
  name: string;
  port: number;
  url: string;
  proc: Subprocess<'ignore', 'pipe', 'pipe'>;
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  exited: Promise<number>;
}

async function pump(stream: ReadableStream<Uint8Array>, sink: (text: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    sink(decoder.decode(value, { stream: true }));
  }
}

/** Spawns an instance with PORT=0 and resolves once it printed the port it listens on (or rejects if it exits first). */
export async function startInstance(name: string, env: Record<string, string>, timeoutMs = 120_000): Promise<Instance> {
  const proc = Bun.spawn([process.execPath, 'src/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      PORT: '0',
      HOST: '127.0.0.1',
      TOOLGATE_DEMO: '0',
      TOOLGATE_LOG_LEVEL: 'error',
      ...env,
    },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  let text = '';
  let onText = () => {};
  const sink = (chunk: string) => {
    text += chunk;
    onText();
  };
  void pump(proc.stdout, sink);
  void pump(proc.stderr, sink);
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${timeoutMs} ms:\n${text}`)), timeoutMs);
    onText = () => {
      const match = /toolgate: port (\d+)/.exec(text);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    proc.exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code} before listening:\n${text}`));
    });
  });
  return { name, port, url: `http://127.0.0.1:${port}`, proc, output: () => text, exited: proc.exited };
}
