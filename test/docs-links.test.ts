// Every relative link in README.md and docs/**/*.md reaches an existing file, and every #anchor an existing heading
// of its target; docs/decisions/README.md is the index scripts/decisions-index.ts would write. Docs are split over
// many pages now, so a renamed heading or a moved file must fail here rather than leave a dead link.
import { describe, expect, test } from 'bun:test';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { listDecisions, renderIndex, DECISIONS_DIR } from '../scripts/decisions-index.ts';

const ROOT = resolve(import.meta.dir, '..');

function markdownUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? markdownUnder(path) : name.endsWith('.md') ? [path] : [];
  });
}

/** The text with fenced blocks blanked and inline code removed: links and headings inside code are not real. */
function withoutCode(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`+[^`\n]*`+/g, (span) => (span.includes('](') ? '' : span.replaceAll('`', '')));
}

/** GitHub's heading anchor: lower-case, punctuation dropped, each space a hyphen; repeats get -1, -2... */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of withoutCode(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = heading!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Relative link targets of a markdown text: inline links and reference definitions, not URLs with a scheme. */
export function linksOf(markdown: string): string[] {
  const text = withoutCode(markdown);
  const inline = [...text.matchAll(/\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
  const refs = [...text.matchAll(/^\s{0,3}\[[^\]]+\]:\s+(\S+)/gm)].map((m) => m[1]!);
  return [...inline, ...refs].filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** Problems with the links of `files` (path -> text); a target outside the map is looked up on disk. */
export function brokenLinks(files: Map<string, string>, exists: (path: string) => boolean): string[] {
  const problems: string[] = [];
  for (const [file, text] of files) {
    for (const link of linksOf(text)) {
      const [pathPart, anchor] = link.split('#', 2) as [string, string | undefined];
      const target = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
      const where = `${relative(ROOT, file)}: ${link}`;
      if (!files.has(target) && !exists(target)) {
        problems.push(`${where} (no such file)`);
        continue;
      }
      if (anchor === undefined || !target.endsWith('.md')) continue;
      const targetText = files.get(target) ?? readFileSync(target, 'utf8');
      if (!anchorsOf(targetText).has(anchor)) problems.push(`${where} (no heading #${anchor})`);
    }
  }
  return problems;
}

describe('documentation links', () => {
  test('every relative link in README.md and docs/ resolves, anchors included', () => {
    const paths = [join(ROOT, 'README.md'), ...markdownUnder(join(ROOT, 'docs'))];
    const files = new Map(paths.map((path) => [path, readFileSync(path, 'utf8')]));
    expect(files.size).toBeGreaterThan(100);
    expect(brokenLinks(files, existsSync)).toEqual([]);
  });

  test('the checker reports a missing file, a missing heading and ignores links in code', () => {
    const a = join(ROOT, 'docs', 'a.md');
    const b = join(ROOT, 'docs', 'b.md');
    const files = new Map([
      [
        a,
        '# A\n\nSee [b](b.md#the-b-heading), [gone](gone.md), [bad](b.md#nope), [self](#a) and [web](https://x.test/y).\n`[code](nowhere.md)`\n```\n[fenced](nowhere.md)\n```\n',
      ],
      [b, '## The `b` heading\n\n[back](a.md#a)\n'],
    ]);
    expect(brokenLinks(files, () => false)).toEqual(['docs/a.md: gone.md (no such file)', 'docs/a.md: b.md#nope (no heading #nope)']);
  });

  test('anchors follow GitHub: code and punctuation dropped, repeats numbered', () => {
    expect([...anchorsOf('# Why the `tools/call` targets are out\n## Memory of `npm start`\n## Memory\n## Memory\n')]).toEqual([
      'why-the-toolscall-targets-are-out',
      'memory-of-npm-start',
      'memory',
      'memory-1',
    ]);
  });

  test('docs/decisions/README.md is the index scripts/decisions-index.ts writes', () => {
    const decisions = listDecisions();
    expect(decisions.length).toBeGreaterThan(100);
    expect(readFileSync(join(DECISIONS_DIR, 'README.md'), 'utf8')).toBe(renderIndex(decisions));
  });
});
