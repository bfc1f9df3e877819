/** Reads the fenced code blocks of README.md and the docs pages, and the `readme-test` markers that say how test/readme.test.ts treats them. */

/** run: executed in order; skip: not run; background: a server started and left running; after-stop: run once the gateway has stopped. */
type BlockMode = 'run' | 'skip' | 'background' | 'after-stop';

export interface ReadmeBlock {
  /** The Markdown file, relative to the repository root. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  code: string;
  mode: BlockMode;
  /** Why the block is not simply run (every marker must give one). */
  reason: string | null;
}

const SHELL_LANGS = new Set(['sh', 'bash', 'shell', 'console', 'zsh']);
const MODES = new Set<BlockMode>(['skip', 'background', 'after-stop']);
const MARKER = /^<!-- readme-test: (\S+) \((.+)\) -->$/;

/**
 * The shell blocks of a Markdown text, in order. Throws on what would let a block escape the test unseen: a fence
 * without a language, an unclosed fence, a malformed or unknown marker, a marker on a block that is not shell.
 */
export function shellBlocks(markdown: string, file = 'README.md'): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const blocks: ReadmeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!;
    const lang = open[2]!.trim();
    if (lang === '') throw new Error(`${file}:${i + 1}: a code fence without a language (sh/bash for commands, json/text for output)`);
    let end = i + 1;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end]!)) end++;
    if (end >= lines.length) throw new Error(`${file}:${i + 1}: unclosed code fence`);
    const code = lines
      .slice(i + 1, end)
      .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
      .join('\n');
    let prev = i - 1;
    while (prev >= 0 && lines[prev]!.trim() === '') prev--;
    const markerLine = prev >= 0 ? lines[prev]!.trim() : '';
    let mode: BlockMode = 'run';
    let reason: string | null = null;
    if (markerLine.startsWith('<!-- readme-test')) {
      const marker = MARKER.exec(markerLine);
      if (!marker || !MODES.has(marker[1] as BlockMode)) {
        throw new Error(`${file}:${prev + 1}: expected <!-- readme-test: skip|background|after-stop (reason) -->, got ${markerLine}`);
      }
      mode = marker[1] as BlockMode;
      reason = marker[2]!;
      if (!SHELL_LANGS.has(lang)) throw new Error(`${file}:${prev + 1}: a readme-test marker on a ${lang} block, which is never run`);
    }
    if (SHELL_LANGS.has(lang)) blocks.push({ file, line: i + 1, lang, code, mode, reason });
    i = end;
  }
  return blocks;
}
