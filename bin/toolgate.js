#!/usr/bin/env node
/**
 * The `toolgate` command of the installed package (decision 0309): finds the Bun binary that came with the package
 * (the `bun` dependency) and runs the gateway (`toolgate start`: src/main.ts) or the operator CLI (src/cli.ts) on it,
 * passing signals through so a SIGTERM reaches the gateway's graceful stop. Plain JavaScript for Node 20+: nothing
 * here needs Bun or a build step.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));

/** The name of Bun's platform package for this machine (the `optionalDependencies` of the `bun` package). */
function platformPackage() {
  const os = { darwin: 'darwin', linux: 'linux', win32: 'windows', freebsd: 'freebsd', android: 'linux' }[process.platform];
  const arch = { x64: 'x64', arm64: 'aarch64' }[process.arch];
  if (!os || !arch) return null;
  // glibc reports its version; musl (Alpine) does not.
  const musl = process.platform === 'linux' && !process.report?.getReport?.().header?.glibcVersionRuntime;
  const android = process.platform === 'android' ? '-android' : '';
  return `@oven/bun-${os}-${arch}${musl ? '-musl' : ''}${android}`;
}

function isBinary(path) {
  try {
    accessSync(path, constants.X_OK);
    // The `bun` package's own bin is a small placeholder until its postinstall puts the binary there.
    return statSync(path).size > 1_000_000;
  } catch {
    return false;
  }
}

/** TOOLGATE_BUN if set, else the platform package's binary, else the `bun` package's (after its postinstall). */
function findBun() {
  if (process.env.TOOLGATE_BUN) return process.env.TOOLGATE_BUN;
  const exe = process.platform === 'win32' ? 'bun.exe' : 'bun';
  const candidates = [];
  const platform = platformPackage();
  for (const from of [root, safeDir('bun/package.json')].filter(Boolean)) {
    if (platform) candidates.push(() => join(dirname(createRequire(join(from, 'package.json')).resolve(`${platform}/package.json`)), 'bin', exe));
  }
  candidates.push(() => join(dirname(require.resolve('bun/package.json')), 'bin', 'bun.exe'));
  for (const candidate of candidates) {
    try {
      const path = candidate();
      if (isBinary(path)) return path;
    } catch {
      // not installed here: try the next place
    }
  }
  return null;
}

function safeDir(request) {
  try {
    return dirname(require.resolve(request));
  } catch {
    return null;
  }
}

const args = process.argv.slice(2);
const bun = findBun();
if (!bun) {
  console.error(
    `toolgate: the Bun runtime that comes with this package was not found (${platformPackage() ?? `no Bun build for ${process.platform}/${process.arch}`}).\n` +
      'Bun ships its binary in an optional platform package, or fetches it in its postinstall: after an install with both\n' +
      '--omit=optional and --ignore-scripts, run `npm rebuild bun`; or set TOOLGATE_BUN to a bun binary.',
  );
  process.exit(3);
}

const start = args[0] === 'start';
const script = join(root, 'src', start ? 'main.ts' : 'cli.ts');
// The gateway's heap setting of `npm start` (decision 0237); JavaScriptCore reads it when the process starts.
const env = start ? { BUN_JSC_heapGrowthMaxIncrease: '0.2', ...process.env } : process.env;
const child = spawn(bun, [script, ...(start ? args.slice(1) : args)], { stdio: 'inherit', env });

// A signal to this process is passed on; the gateway stops gracefully and this process exits as it does.
const passOn = (signal) => {
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => passOn(signal));
// `npx toolgate start` runs this under npm and a shell; a SIGTERM to npm ends both without reaching us. Losing the
// parent that started us is taken as that SIGTERM, so the gateway is not left running without its owner.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && passOn('SIGTERM'), 500).unref();
child.on('error', (error) => {
  console.error(`toolgate: cannot run ${bun}: ${error.message}`);
  process.exit(3);
});
child.on('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
