/** The embedded data folder: its secret key, operator token, and the lock that keeps one process per folder. */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomSecret } from './crypto.ts';

export interface LockInfo {
  pid: number;
  port: number;
  url: string;
}

export class DataDirBusyError extends Error {
  constructor(readonly holder: LockInfo) {
    super(`the data folder is in use by process ${holder.pid} (serving ${holder.url})`);
  }
}

function ensureDataDir(dataDir: string): string {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** Reads a secret file, creating it (mode 0600) with fresh randomness on first use. */
function fileSecret(dataDir: string, name: string, make: () => string): string {
  const path = join(ensureDataDir(dataDir), name);
  if (!existsSync(path)) {
    try {
      writeFileSync(path, `${make()}\n`, { mode: 0o600, flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  return readFileSync(path, 'utf8').trim();
}

export const embeddedSecretKey = (dataDir: string) => fileSecret(dataDir, 'secret.key', () => Buffer.from(randomSecret(32), 'base64url').toString('base64'));
export const embeddedOperatorToken = (dataDir: string) => fileSecret(dataDir, 'operator.token', () => `tgo_${randomSecret(32)}`);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Who holds the folder, if a live process does. */
export function lockHolder(dataDir: string): LockInfo | null {
  const path = join(resolve(dataDir), 'server.lock');
  if (!existsSync(path)) return null;
  try {
    const info = JSON.parse(readFileSync(path, 'utf8')) as LockInfo;
    return alive(info.pid) && info.pid !== process.pid ? info : null;
  } catch {
    return null;
  }
}

/** Takes the folder for this process (PGlite allows one process per folder); a stale lock is replaced. */
export function acquireDataDirLock(dataDir: string, info: Omit<LockInfo, 'pid'>): () => void {
  const path = join(ensureDataDir(dataDir), 'server.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeFileSync(fd, JSON.stringify({ pid: process.pid, ...info }));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = lockHolder(dataDir);
      if (holder) throw new DataDirBusyError(holder);
      rmSync(path, { force: true });
    }
  }
  throw new Error('could not lock the data folder');
}

/** Rewrites the lock's details (the real port once the server listens); the holder stays this process. */
export function updateLockInfo(dataDir: string, info: Omit<LockInfo, 'pid'>): void {
  writeFileSync(join(resolve(dataDir), 'server.lock'), JSON.stringify({ pid: process.pid, ...info }), { mode: 0o600 });
}
