// One Anthropic Messages reply, whole and as its SSE frames: what the benches' local upstreams answer.
/** The key the benches' clients and gateways present to the local upstream (which does not check it). */
export const UPSTREAM_KEY = 'bench-upstream-key';

const usage = { input_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 5 };
export const message = JSON.stringify({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5',
  content: [{ type: 'text', text: 'Hi' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage,
});
export const frames = [
  ['message_start', { type: 'message_start', message: { ...JSON.parse(message), content: [], stop_reason: null } }],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } }],
  ['message_stop', { type: 'message_stop' }],
].map(([event, data]) => `event: ${String(event)}\ndata: ${JSON.stringify(data)}\n\n`);
