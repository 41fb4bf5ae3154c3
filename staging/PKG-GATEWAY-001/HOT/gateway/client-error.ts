import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** The latest response on each connection, so a parse error on it knows whether one is being written. */
const responding = new WeakMap<Duplex, ServerResponse>();

/** Node's own answers to a request it could not parse, each with the status node gives it. */
const CLIENT_ERRORS: Readonly<Record<string, [status: number, reason: string, what: string]>> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'its headers are over the size limit'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'it was not received within the request deadline'],
};

/**
 * A request node refused before the gateway saw it (malformed framing, both Content-Length and
 * Transfer-Encoding, headers too large, too slow) is answered with a JSON error body both SDKs parse (node's
 * own answer has none), then the connection is closed. Which API the client speaks is unknown here: the
 * body is Anthropic's shape, whose `error.message` the OpenAI SDK reads too.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // A response already begun on this connection cannot be followed by another one.
  const current = responding.get(socket);
  const begun = current?.headersSent === true && !current.writableFinished;
  if (error.code === 'ECONNRESET' || !socket.writable || begun) {
    socket.destroy();
    return;
  }
  const [status, reason, what] = CLIENT_ERRORS[error.code ?? ''] ?? [
    400,
    'Bad Request',
    `it is not well-formed HTTP/1.1 (${error.code ?? 'unknown'})`,
  ];
  const body = JSON.stringify({
    type: 'error',
    error: { type: 'invalid_request_error', message: `the request is refused: ${what}`, param: null, code: null },
  });
  // A client too slow to send its request may well manage on a retry; a malformed one never will.
  const retry = status === 408 ? '' : 'x-should-retry: false\r\n';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `${retry}connection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}

/** The response now being written on a request's connection. */
export function noteResponding(socket: Duplex, res: ServerResponse): void {
  responding.set(socket, res);
}
