/** The subset of autocannon's programmatic API the benchmark uses (the package ships no types). */
declare module 'autocannon' {
  export interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    total: number;
    p50: number;
    p90: number;
    p99: number;
    p999?: number;
  }
  export interface Result {
    title?: string;
    url: string;
    requests: Histogram & { sent: number };
    latency: Histogram;
    throughput: Histogram;
    duration: number;
    errors: number;
    timeouts: number;
    mismatches: number;
    non2xx: number;
    '2xx': number;
    start: Date;
    finish: Date;
  }
  export interface Options {
    url: string;
    connections?: number;
    duration?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    timeout?: number;
    pipelining?: number;
    title?: string;
    verifyBody?: (body: string) => boolean;
    /** Requests each connection sends in turn (path, headers merged over `headers`, body). */
    requests?: Array<{
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      /** Called before each send of this request (when given): returns the request to send. */
      setupRequest?: (req: { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer }) => object;
    }>;
  }
  export interface Instance extends PromiseLike<Result> {
    stop(): void;
  }
  function autocannon(options: Options): Instance & Promise<Result>;
  export default autocannon;
}
