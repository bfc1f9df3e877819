/** Background work of this instance (connector validation): tracked so shutdown and tests can wait for it. */
export class JobTracker {
  private readonly running = new Set<Promise<unknown>>();

  run(job: () => Promise<unknown>): void {
    const promise = job().catch(() => {});
    this.running.add(promise);
    void promise.finally(() => this.running.delete(promise));
  }

  /** Resolves when no job is running (including jobs started while waiting). */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.all([...this.running]);
  }
}
