// A local Anthropic Messages upstream in its own process, for the peer benches: the gateways under test and the
// client each get a core's worth of scheduling instead of sharing the upstream's event loop. Prints its port.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { frames, message } from './anthropic-reply.js';

const server = createServer({ keepAlive: true }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let stream = false;
    try {
      stream = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { stream?: boolean }).stream === true;
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const frame of frames) res.write(frame);
      res.end();
    } else {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(message)) });
      res.end(message);
    }
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
