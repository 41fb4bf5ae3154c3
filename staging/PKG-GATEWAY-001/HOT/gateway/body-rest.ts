/**
 * How long an upstream may take to end its body once its terminal event arrived. An honest one ends it in the same
 * breath (the chunked terminator follows the last event); one that holds the connection open past this has it closed.
 */
export const BODY_REST_GRACE_MS = 1_000;

/**
 * The rest of a stream's body after its terminal event, read and dropped in the background: a body read to its end
 * leaves its keep-alive connection to the next call (closing it mid-body costs every streamed call a new connection,
 * and a TLS handshake on a real upstream). Nothing read here reaches the client or the record; the client's reply
 * never waits on it. An upstream still sending after `graceMs` is cancelled, which closes its connection.
 */
export function dropRest(body: AsyncIterator<Uint8Array>, cancel: () => void, graceMs = BODY_REST_GRACE_MS): void {
  const timer = setTimeout(cancel, graceMs);
  timer.unref();
  void (async () => {
    try {
      while (!(await body.next()).done);
    } catch {
      // A body that fails after its terminal event (cancelled here, reset, over its size cap) changes nothing.
    } finally {
      clearTimeout(timer);
    }
  })();
}
