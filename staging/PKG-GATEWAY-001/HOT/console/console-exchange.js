// One EXCHANGE: its prompt and response, its attempts, and its inclusion proof.
import { conversation, response } from './console-conversation.js';
import { REPORT, api } from './console-data.js';
import { cell, el, meta, num, table } from './console-dom.js';

export async function exchangeView(id) {
  const x = await api('exchange', { id });
  const m = x.metadata;
  return [
    el('h1', {}, 'Exchange ', el('span', { class: 'mono', 'data-field': 'id' }, x.id)),
    meta([
      [
        'session',
        el('a', { href: `#/session/${encodeURIComponent(m.session_id ?? '')}` }, m.session_id ?? '—'),
        'session_id',
      ],
      ['agent', m.agent_id ?? '—', 'agent_id'],
      ['time', x.timestamp, 'timestamp'],
      ['decision', x.decision, 'decision'],
      ['reason', x.reason, 'reason'],
      ['model', m.model_id ?? '—', 'model_id'],
      ...(m.model_alias === undefined
        ? []
        : [
            ['alias asked for', m.model_alias ?? '—', 'model_alias'],
            ['served by', m.served_by ?? 'no deployment answered', 'served_by'],
          ]),
      ['input tokens', num(m.input_tokens), 'input_tokens'],
      ['cache read tokens', num(m.cache_read_tokens), 'cache_read_tokens'],
      ['cache write tokens', num(m.cache_write_tokens), 'cache_write_tokens'],
      ['output tokens', num(m.output_tokens), 'output_tokens'],
      ['latency', `${num(m.latency_ms)} ms`, 'latency_ms'],
      ['attempts', Array.isArray(m.attempts) ? m.attempts.length : 0, 'attempts'],
      ['stop reason', m.finish_reason ?? m.error_code ?? '—', 'finish_reason'],
      ['stable prefix', m.stable_prefix_hash ?? '—', 'stable_prefix_hash'],
      ['redacted by', x.redacted_by.length > 0 ? x.redacted_by.join(', ') : 'nothing redacted', 'redacted_by'],
    ]),
    proofLink(x.id),
    attemptsTable(m.attempts),
    x.truncated
      ? el('p', { class: 'bad' }, 'Cut for display: the ledger holds the whole text (cplane ledger query).')
      : null,
    el('h2', {}, 'Prompt'),
    conversation(x.conversation, x.prompt),
    el('details', {}, el('summary', {}, 'prompt as sent'), el('pre', { 'data-field': 'prompt' }, x.prompt.join(''))),
    el('h2', {}, 'Response'),
    response(x.response),
    el('details', {}, el('summary', {}, 'response as received'), el('pre', { 'data-field': 'response' }, x.response)),
  ];
}

/** "download proof": the console's proof route on a SQLite root; said plainly where there is none. */
function proofLink(id) {
  const offered = REPORT === null && document.getElementById('view')?.dataset.proofs === '1';
  if (!offered)
    return el(
      'p',
      { class: 'muted', id: 'proof' },
      REPORT === null
        ? 'Inclusion proofs are not available on this store (PostgreSQL).'
        : `Inclusion proof: cplane ledger prove --entry ${id}`,
    );
  // The one link not to a view: built here with the route's own path, never from data but the encoded id.
  const link = el('a', { id: 'proof', download: '' }, 'download proof');
  link.setAttribute('href', `/console/api/proof?${new URLSearchParams({ id })}`);
  return el('p', {}, link, ' (check it offline: cplane ledger verify-proof FILE --key VKEY)');
}

/** Every upstream attempt of a call, in order: where it went, how it ended, how long it took. */
function attemptsTable(attempts) {
  if (!Array.isArray(attempts) || attempts.length === 0) return null;
  return [
    el('h2', {}, 'Attempts'),
    table(
      [
        '#attempt',
        'deployment',
        'provider',
        'model',
        'outcome',
        '#status',
        'kind',
        '#latency ms',
        'upstream request id',
      ],
      attempts.map((a) =>
        el(
          'tr',
          { 'data-attempt': a.attempt },
          cell(a.attempt, 'attempt'),
          cell(a.deployment ?? '—', 'deployment'),
          cell(a.provider ?? '—', 'provider'),
          cell(a.model ?? '—', 'model'),
          cell(a.outcome, 'outcome', a.outcome === 'success' ? 'ok' : 'bad'),
          cell(a.status ?? '—', 'status', 'num'),
          cell(a.kind ?? '—', 'kind'),
          cell(num(a.latency_ms), 'latency_ms', 'num'),
          cell(a.upstream_request_id ?? '—', 'upstream_request_id', 'mono'),
        ),
      ),
      { 'data-table': 'attempts' },
    ),
  ];
}
