// The root, the session list and one session's turns.
import { turnPlot } from './console-charts.js';
import { conversation, response } from './console-conversation.js';
import { REPORT, api } from './console-data.js';
import { cell, el, meta, money, num, pct, table } from './console-dom.js';

export async function rootView(params) {
  const root = await api('root', { verify: params.verify });
  const view = [el('h1', {}, 'Root'), el('p', { class: 'mono', 'data-field': 'root' }, root.root)];
  view.push(el('h2', {}, 'Ledger'));
  const verify = root.ledger.verify;
  view.push(
    meta([
      ['head', `${root.ledger.head.seq}:${root.ledger.head.hash}`, 'head'],
      [
        'checkpoint',
        root.ledger.checkpoint === null
          ? 'none signed yet'
          : `${root.ledger.checkpoint.seq}:${root.ledger.checkpoint.hash} (${root.ledger.checkpoint.time}) ${root.ledger.checkpoint.matches ? 'held by the chain' : 'NOT held by the chain'}`,
        'checkpoint',
      ],
      [
        'verify',
        verify === null
          ? el(
              'span',
              {},
              'not run since the head moved ',
              REPORT === null ? el('a', { href: '#/root?verify=1' }, 'verify now') : '',
            )
          : el(
              'span',
              { class: verify.ok ? 'ok' : 'bad' },
              verify.ok
                ? `PASS: ${num(verify.entries)} entries, ${num(verify.redacted_blocks)} redacted blocks (${verify.checked_at})`
                : `FAIL: ${verify.first_bad?.message ?? `${verify.content_problems} content problems`}`,
            ),
        'verify',
      ],
      ['spooled exchanges', `${root.spooled_exchanges} waiting, ${root.quarantined_exchanges} quarantined`, 'spool'],
    ]),
  );
  view.push(el('h2', {}, 'Packages'));
  view.push(
    table(
      ['package', 'version', '#layer', '#files', 'signature', 'installed'],
      root.packages.map((p) =>
        el(
          'tr',
          {},
          cell(p.package_id, 'package_id'),
          cell(p.version, 'version'),
          cell(p.layer, 'layer', 'num'),
          cell(p.files, 'files', 'num'),
          cell(p.signature, 'signature'),
          cell(p.installed_at, 'installed_at'),
        ),
      ),
      { 'data-table': 'packages' },
    ),
  );
  view.push(el('h2', {}, 'Last gate check'));
  const gc = root.gate_check;
  if (gc === null)
    view.push(el('p', { class: 'muted' }, 'No gate check has run on this root (cplane gate-check --root R).'));
  else if (!Array.isArray(gc.gates))
    view.push(el('p', { class: 'bad' }, `unreadable: ${gc.unreadable ?? 'not a gate-check result'}`));
  else {
    view.push(el('p', {}, `${gc.checked_at}: ${gc.passed} passed, ${gc.failed} failed, ${gc.warned} warned`));
    view.push(
      table(
        ['gate', 'name', 'status', 'message / findings'],
        gc.gates.map((g) =>
          el(
            'tr',
            {},
            cell(g.id, 'gate'),
            cell(g.name),
            cell(g.status, 'status', g.status),
            el(
              'td',
              {},
              g.message,
              (g.findings ?? []).map((f) => el('div', { class: 'mono' }, `${f.code}: ${f.message}`)),
            ),
          ),
        ),
        { 'data-table': 'gates' },
      ),
    );
  }
  return view;
}

export async function sessionsView(params) {
  const page = await api('sessions', {
    agent: params.agent,
    since: params.since,
    until: params.until,
    before: params.before,
  });
  const form = el(
    'form',
    { class: 'filters', id: 'filters' },
    el('label', {}, 'agent', el('input', { name: 'agent', value: params.agent ?? '' })),
    el(
      'label',
      {},
      'since (UTC)',
      el('input', { name: 'since', value: params.since ?? '', placeholder: '2026-11-26T00:00:00Z' }),
    ),
    el('label', {}, 'until (UTC)', el('input', { name: 'until', value: params.until ?? '' })),
    el('button', { type: 'submit' }, 'Filter'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const name of ['agent', 'since', 'until']) {
      const value = form.elements[name].value.trim();
      if (value) query.set(name, value);
    }
    window.location.hash = `#/sessions?${query}`;
  });
  const rows = page.sessions.map((s) =>
    el(
      'tr',
      { 'data-session': s.session_id },
      el(
        'td',
        {},
        el('a', { href: `#/session/${encodeURIComponent(s.session_id)}`, 'data-field': 'session_id' }, s.session_id),
      ),
      cell(s.agents.join(', '), 'agents'),
      cell(num(s.requests), 'requests', 'num'),
      cell(num(s.input_tokens), 'input_tokens', 'num'),
      cell(num(s.cache_read_tokens), 'cache_read_tokens', 'num'),
      cell(num(s.cache_write_tokens), 'cache_write_tokens', 'num'),
      cell(num(s.output_tokens), 'output_tokens', 'num'),
      cell(money(s.cost), 'cost', 'num'),
      cell(pct(s.cache_hit_share), 'cache_hit_share', 'num'),
      cell(num(s.errors), 'errors', s.errors > 0 ? 'num bad' : 'num'),
      cell(s.last_activity, 'last_activity'),
    ),
  );
  const next = new URLSearchParams();
  for (const name of ['agent', 'since', 'until']) if (params[name]) next.set(name, params[name]);
  if (page.next_before !== null) next.set('before', page.next_before);
  return [
    el('h1', {}, 'Sessions'),
    form,
    table(
      [
        'session',
        'agents',
        '#requests',
        '#input',
        '#cache read',
        '#cache write',
        '#output',
        '#cost',
        '#cache hit',
        '#errors',
        'last activity',
      ],
      rows,
      { 'data-table': 'sessions' },
    ),
    page.sessions.length === 0 ? el('p', { class: 'muted' }, 'No sessions.') : null,
    page.next_before === null ? null : el('a', { href: `#/sessions?${next}`, id: 'older' }, 'Older sessions →'),
  ];
}

function usageLine(m) {
  const input = m.input_tokens ?? null;
  const read = m.cache_read_tokens ?? 0;
  const write = m.cache_write_tokens ?? 0;
  const uncached = typeof input === 'number' ? input - read - write : null;
  return `uncached ${num(uncached)} · cache read ${num(read)} · cache write ${num(write)} · output ${num(m.output_tokens)}`;
}

function turnView(t, index) {
  const m = t.metadata;
  return el(
    'section',
    { class: 'turn', 'data-exchange': t.id },
    el(
      'h3',
      {},
      `Turn ${index} · `,
      el('a', { href: `#/exchange/${encodeURIComponent(t.id)}` }, t.id),
      ` · ${t.timestamp} · `,
      el('span', { class: t.decision === 'SUCCESS' ? 'ok' : 'bad' }, t.decision),
    ),
    meta([
      ['model', m.model_id ?? '—', 'model_id'],
      ['usage', usageLine(m), 'usage'],
      ['cost', money(t.cost), 'cost'],
      [
        'latency',
        `${num(m.latency_ms)} ms, ${Array.isArray(m.attempts) ? m.attempts.length : 0} attempt(s)`,
        'latency',
      ],
      ['stop reason', m.finish_reason ?? m.error_code ?? '—', 'finish_reason'],
      m.stable_prefix_hash
        ? ['stable prefix', m.stable_prefix_hash, 'prefix']
        : ['context hash', m.context_hash ?? '—', 'context_hash'],
      ...(t.redacted_by.length > 0 ? [['redacted by', t.redacted_by.join(', '), 'redacted_by']] : []),
    ]),
    el(
      'details',
      { open: index <= 3 ? '' : undefined },
      el(
        'summary',
        {},
        t.continues ? `new in this turn (${t.prompt_new.length} pieces)` : `prompt (${t.prompt_new.length} pieces)`,
      ),
      conversation(t.conversation, t.prompt_new),
    ),
    response(t.response),
  );
}

export async function sessionView(id, params) {
  const page = await api('session', { id, after: params.after });
  const first = params.after ? Number(params.index ?? 1) : 1;
  const next =
    page.next_after === null
      ? null
      : `#/session/${encodeURIComponent(id)}?after=${page.next_after}&index=${first + page.turns.length}`;
  return [
    el('h1', {}, 'Session ', el('span', { class: 'mono', 'data-field': 'session' }, id)),
    el('p', { class: 'muted' }, 'Bars: cost per turn. Line: cache-hit share per turn.'),
    turnPlot(page.turns),
    page.turns.map((t, i) => turnView(t, first + i)),
    next === null ? null : el('a', { href: next, id: 'later' }, 'Later turns →'),
    typeof page.cut === 'number'
      ? el(
          'p',
          { class: 'bad', id: 'cut' },
          `This report holds the first ${page.cut} turns of this session: it reached its size limit. The ledger holds them all (cplane ledger query).`,
        )
      : null,
  ];
}
