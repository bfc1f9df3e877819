/**
 * A stand-in OTLP/HTTP collector for measuring the cost of tracing: accepts trace exports on /v1/traces (JSON or
 * protobuf), counts requests and bytes, answers 200. `bun bench/otlp-sink.ts [--port=4301]`; prints its counts on exit.
 */
const portArg = process.argv.find((a) => a.startsWith('--port='));
let exported = 0;
let bytes = 0;
let spans = 0;
const server = Bun.serve({
  port: portArg ? Number(portArg.slice(7)) : 4301,
  hostname: '127.0.0.1',
  async fetch(request) {
    const body = new Uint8Array(await request.arrayBuffer());
    exported++;
    bytes += body.byteLength;
    if ((request.headers.get('content-type') ?? '').includes('json')) {
      const text = new TextDecoder().decode(body);
      spans += (text.match(/"spanId"/g) ?? []).length;
    }
    return Response.json({});
  },
});
console.log(`otlp sink on http://127.0.0.1:${server.port}`);
const report = () => {
  console.log(`otlp sink: ${exported} exports, ${spans} spans, ${bytes} bytes`);
  process.exit(0);
};
process.on('SIGTERM', report);
process.on('SIGINT', report);
export {};
