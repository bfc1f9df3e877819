/**
 * Writes docs/decisions/README.md, the index of the numbered decision files, from the files themselves (title,
 * status, whether it departs from the spec). With --check, fails when the index on disk differs from what it would
 * write, so a decision added without re-running this is caught.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const DECISIONS_DIR = join(import.meta.dir, '..', 'docs', 'decisions');
const NUMBERED = /^(\d{4})-[a-z0-9-]+\.md$/;

export interface DecisionEntry {
  file: string;
  number: string;
  title: string;
  status: string;
  departs: boolean;
}

/** Reads one decision file's header lines; throws naming the file when one is missing. */
export function readDecision(file: string, text: string): DecisionEntry {
  const number = NUMBERED.exec(file)?.[1];
  const title = /^# \d{4}\. (.+)$/m.exec(text)?.[1];
  const status = /^Status: (.+)$/m.exec(text)?.[1];
  const departed = /^Spec line departed from: (.+)$/m.exec(text)?.[1];
  if (!number || !title || !status || !departed) {
    throw new Error(`${file}: needs "# NNNN. Title", "Status: ..." and "Spec line departed from: ..." lines`);
  }
  return { file, number, title, status, departs: !departed.startsWith('none') };
}

export function listDecisions(dir = DECISIONS_DIR): DecisionEntry[] {
  return readdirSync(dir)
    .filter((file) => NUMBERED.test(file))
    .sort()
    .map((file) => readDecision(file, readFileSync(join(dir, file), 'utf8')));
}

const HEADER = `# Decisions

Each file settles one thing that \`gateway-spec.md\` leaves "not shown" (or that an issue left to us), with the
reason, or says which spec line it departs from and why. The contract files (\`openapi.yaml\`,
\`jsonrpc-schema.json\`) carry the same decisions in their descriptions. Measurements and their history are in
[docs/performance.md](../performance.md).

**Adding one:** copy the template below into \`NNNN-short-slug.md\` with the next free number (work done in
parallel branches takes its numbers when it is merged), then run
\`node_modules/.bin/bun scripts/decisions-index.ts\` to rewrite this index (\`test/docs-links.test.ts\` fails while it
is stale). A decision that replaces another sets the older one's status to \`superseded by [NNNN](NNNN-slug.md)\`.

\`\`\`markdown
# NNNN. Title saying what was decided

Status: accepted

Spec line departed from: none (or the spec line, quoted)

**Context.** What was open, in a sentence or two.

**Decision.** What the gateway does.

**Reason.** Why, with the figures that justify it.
\`\`\`

| # | Decision | Status | Departs from the spec |
|--:|:--|:--|:--|
`;

export function renderIndex(entries: DecisionEntry[]): string {
  const rows = entries.map((e) => `| ${e.number} | [${e.title.replaceAll('|', '\\|')}](${e.file}) | ${e.status} | ${e.departs ? 'yes' : 'no'} |`);
  return `${HEADER}${rows.join('\n')}\n`;
}

if (import.meta.main) {
  const path = join(DECISIONS_DIR, 'README.md');
  const wanted = renderIndex(listDecisions());
  if (process.argv.includes('--check')) {
    if (readFileSync(path, 'utf8') !== wanted) {
      console.error('docs/decisions/README.md is stale: run bun scripts/decisions-index.ts');
      process.exit(1);
    }
  } else {
    writeFileSync(path, wanted);
  }
}
