/** A background task: `run` once after `firstMs`, then every `everyMs`; neither timer keeps the process alive. */
export function startPeriodic(run: () => unknown, firstMs: number, everyMs: number): () => void {
  const first = setTimeout(run, firstMs);
  const timer = setInterval(run, everyMs);
  first.unref?.();
  timer.unref?.();
  return () => {
    clearTimeout(first);
    clearInterval(timer);
  };
}
