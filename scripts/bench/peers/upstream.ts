// A local Anthropic Messages upstream in its own process, for the peer benches: the gateways under test and the
// client each get a core's worth of scheduling instead of sharing the upstream's event loop. Prints its port.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const usage = { input_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 5 };
const message = JSON.stringify({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5',
  content: [{ type: 'text', text: 'Hi' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage,
});
const frames = [
  ['message_start', { type: 'message_start', message: { ...JSON.parse(message), content: [], stop_reason: null } }],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } }],
  ['message_stop', { type: 'message_stop' }],
].map(([event, data]) => `event: ${String(event)}\ndata: ${JSON.stringify(data)}\n\n`);

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
