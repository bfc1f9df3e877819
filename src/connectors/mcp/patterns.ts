/**
 * Which regular expressions of an upstream tool's input schema the gateway will run. Ajv runs `pattern` and
 * `patternProperties` on the agent's arguments inside the gateway, with a backtracking engine: a pattern of the
 * upstream's choosing must not be able to take exponential time on a short argument (ReDoS against every org).
 */

/** Longer patterns are refused outright; tool inputs need nothing like it. */
const MAX_PATTERN_LENGTH = 512;

interface Group {
  repeats: boolean;
  alternates: boolean;
}

/** Why the gateway will not run this pattern, or null. */
export function patternProblem(pattern: string): string | null {
  if (pattern.length > MAX_PATTERN_LENGTH) return `a pattern is longer than ${MAX_PATTERN_LENGTH} characters`;
  try {
    new RegExp(pattern, 'u'); // as Ajv compiles it
  } catch {
    return 'a pattern is not a valid regular expression';
  }
  if (/\\[1-9]|\\k</.test(pattern)) return 'a pattern uses a backreference';
  // Star height at most 1: a repeated group may hold neither a repetition nor an alternation ((a+)+, (a|a)*), the
  // shapes whose backtracking grows exponentially with the input.
  const stack: Group[] = [{ repeats: false, alternates: false }];
  let i = 0;
  const repeatAt = (at: number): boolean => {
    const c = pattern[at];
    if (c === '*' || c === '+') return true;
    if (c !== '{') return false;
    const m = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(at));
    return m !== null && (m[2] !== undefined && (m[3] === '' || Number(m[3]) > 1) ? true : Number(m[1]) > 1);
  };
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === '\\') {
      i += 2;
    } else if (c === '[') {
      i++;
      while (i < pattern.length && pattern[i] !== ']') i += pattern[i] === '\\' ? 2 : 1;
      i++;
    } else if (c === '(') {
      stack.push({ repeats: false, alternates: false });
      i++;
      continue;
    } else if (c === ')') {
      const group = stack.pop()!;
      if (stack.length === 0) return 'a pattern could not be read';
      i++;
      const repeated = repeatAt(i);
      if (repeated && (group.repeats || group.alternates))
        return 'a pattern repeats a group that itself repeats or alternates (it could take exponential time)';
      if (repeated || group.repeats) stack[stack.length - 1]!.repeats = true;
      continue;
    } else if (c === '|') {
      stack[stack.length - 1]!.alternates = true;
      i++;
      continue;
    } else {
      i++;
    }
    if (repeatAt(i)) stack[stack.length - 1]!.repeats = true;
  }
  return null;
}
