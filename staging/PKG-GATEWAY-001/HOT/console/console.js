// The cplane console: draws each view from the gateway's /console/api/* (or, in a report, from the JSON the
// page embeds) with DOM text nodes only. No markup is ever built from data, so prompt text stays text.

const embedded = document.getElementById('cplane-data');
const REPORT = embedded === null ? null : JSON.parse(embedded.textContent);
const SVG = 'http://www.w3.org/2000/svg';
const PAGE = 50;

/** An element with attributes and children; strings become text nodes. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.className = value;
    else if (name === 'href') node.setAttribute('href', safeHref(value));
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Links go only to the console's own views. */
function safeHref(value) {
  return typeof value === 'string' && value.startsWith('#/') ? value : '#/root';
}

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

const num = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : '—');
const money = (n) => (typeof n === 'number' ? n.toFixed(6) : '—');
const pct = (n) => (typeof n === 'number' ? `${(n * 100).toFixed(1)}%` : '—');
const cell = (value, field, cls) => el('td', { class: cls, 'data-field': field }, value);

function table(headers, rows, attrs = {}) {
  return el(
    'table',
    attrs,
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        headers.map((h) => el('th', { class: h.startsWith('#') ? 'num' : undefined }, h.replace(/^#/, ''))),
      ),
    ),
    el('tbody', {}, rows),
  );
}

function meta(pairs) {
  return el(
    'dl',
    { class: 'meta' },
    pairs.flatMap(([label, value, field]) => [el('dt', {}, label), el('dd', { 'data-field': field }, value)]),
  );
}

// ---- data: the gateway's API, or the report's embedded copy -------------------------------------------------

async function api(name, params = {}) {
  if (REPORT !== null) return fromReport(name, params);
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== '') query.set(key, value);
  const res = await fetch(`/console/api/${name}?${query}`, { headers: { accept: 'application/json' } });
  if (res.status === 401) {
    window.location.assign('/console/');
    throw new Error('signed out');
  }
  const body = await res.json();
  if (!res.ok) throw new Error(`${body.error?.code ?? res.status}: ${body.error?.message ?? ''}`);
  return body;
}

function fromReport(name, params) {
  if (name === 'sessions') {
    const limit = PAGE;
    const list = REPORT.sessions.filter(
      (s) =>
        (!params.agent || s.agents.includes(params.agent)) &&
        (!params.since || s.last_activity >= params.since) &&
        (!params.until || s.first_activity <= params.until) &&
        (!params.before || s.last_seq < Number(params.before)),
    );
    const page = list.slice(0, limit);
    return { sessions: page, next_before: list.length > limit ? page[page.length - 1].last_seq : null };
  }
  if (name === 'session') {
    const all = (REPORT.turns[params.id] ?? []).filter((t) => !params.after || t.seq > Number(params.after));
    const page = all.slice(0, PAGE);
    const more = all.length > PAGE;
    const cut =
      REPORT.turns_cut && Object.hasOwn(REPORT.turns_cut, params.id) && !more ? REPORT.turns_cut[params.id] : null;
    return { turns: page, next_after: more ? page[page.length - 1].seq : null, cut };
  }
  if (name === 'exchange') {
    for (const turns of Object.values(REPORT.turns)) {
      let prompt = [];
      let items = [];
      for (const t of turns) {
        prompt = t.continues ? prompt.slice(0, -1).concat(t.prompt_new) : t.prompt_new.slice();
        if (!t.continues) items = t.conversation;
        else items = items === null || t.conversation === null ? null : items.concat(t.conversation);
        if (t.id === params.id) {
          const { prompt_new: _n, continues: _c, cost: _k, conversation: _v, ...rest } = t;
          return { ...rest, prompt, conversation: items, truncated: false };
        }
      }
    }
    throw new Error('no EXCHANGE with that id in this report');
  }
  if (name === 'keys')
    throw new Error('The key inventory is shown by a gateway’s console (cplane serve), not in a report.');
  return REPORT[name];
}

// ---- rendering a prompt: the conversation the server read from it (conversation.ts) ---------------------------

function part(p) {
  if (p.kind === 'text') return el('pre', {}, p.text);
  if (p.kind === 'tool_call')
    return el(
      'div',
      { class: 'call' },
      el('div', { class: 'role' }, `→ tool call ${p.name}${p.id ? ` (${p.id})` : ''}`),
      el('pre', {}, p.input),
    );
  if (p.kind === 'tool_result')
    return el(
      'div',
      { class: 'call' },
      el('div', { class: 'role' }, `← tool result${p.id ? ` ${p.id}` : ''}${p.is_error ? ' (error)' : ''}`),
      p.parts.map(part),
    );
  return el('details', {}, el('summary', {}, p.label), el('pre', {}, p.text));
}

function item(x) {
  const redacted = /\[REDACTED:/.test(JSON.stringify(x)) ? 'piece redacted' : 'piece';
  if (x.kind === 'message')
    return el('div', { class: redacted, 'data-role': x.role }, el('div', { class: 'role' }, x.role), x.parts.map(part));
  if (x.kind === 'system')
    return el(
      'div',
      { class: redacted, 'data-role': 'system' },
      el('div', { class: 'role' }, 'system'),
      x.parts.map(part),
    );
  if (x.kind === 'tool')
    return el(
      'div',
      { class: redacted, 'data-tool': x.name },
      el('div', { class: 'role' }, `tool ${x.name}`),
      el('pre', {}, x.description),
      el('details', {}, el('summary', {}, 'schema'), el('pre', {}, x.schema)),
    );
  return null;
}

/** Messages, tools and calls; the request's other fields on one line; raw pieces when it could not be read. */
function conversation(items, pieces) {
  if (items === null || items === undefined)
    return pieces.map((text) =>
      el('div', { class: /\[REDACTED:/.test(text) ? 'piece redacted' : 'piece' }, el('pre', {}, text)),
    );
  const settings = items.filter((x) => x.kind === 'setting').map((x) => `${x.name}: ${x.value}`);
  const shown = items.map(item).filter(Boolean);
  if (settings.length === 0) return shown;
  return [el('p', { class: 'muted mono', 'data-field': 'settings' }, settings.join(' · ')), ...shown];
}

function response(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const blocks = Array.isArray(value) ? value : null;
  return el(
    'div',
    { class: 'piece' },
    el('div', { class: 'role' }, 'assistant'),
    blocks === null ? el('pre', {}, text) : blocks.map(responseBlock),
  );
}

/** A response block: Anthropic content blocks and Chat tool calls as the gateway records a response. */
function responseBlock(b) {
  if (b && b.type === 'text' && typeof b.text === 'string') return el('pre', {}, b.text);
  if (b && b.type === 'tool_use')
    return part({ kind: 'tool_call', id: b.id ?? null, name: b.name ?? '', input: JSON.stringify(b.input, null, 2) });
  if (b && b.type === 'function' && b.function)
    return part({
      kind: 'tool_call',
      id: b.id ?? null,
      name: b.function.name ?? '',
      input: String(b.function.arguments ?? ''),
    });
  return el('pre', {}, JSON.stringify(b, null, 2));
}

// ---- plots, drawn here as SVG -------------------------------------------------------------------------------

function barChart(values, labels, { width = 640, height = 160, title, cls = 'bar' } = {}) {
  const chart = svg('svg', { width, height: height + 30, role: 'img', 'aria-label': title ?? 'chart' });
  const max = Math.max(...values, 0) || 1;
  const w = values.length === 0 ? 0 : (width - 40) / values.length;
  chart.append(svg('line', { class: 'axis', x1: 40, y1: height, x2: width, y2: height }));
  chart.append(svg('text', { x: 0, y: 12 }, String(Number(max.toPrecision(3)))));
  values.forEach((v, i) => {
    const h = (v / max) * (height - 10);
    const bar = svg('rect', { class: cls, x: 40 + i * w + 1, y: height - h, width: Math.max(1, w - 2), height: h });
    bar.append(svg('title', {}, `${labels[i]}: ${v}`));
    chart.append(bar);
  });
  if (labels.length > 0) {
    chart.append(svg('text', { x: 40, y: height + 14 }, labels[0]));
    chart.append(svg('text', { x: width - 120, y: height + 14 }, labels[labels.length - 1]));
  }
  return chart;
}

function turnPlot(turns) {
  const width = 640;
  const height = 140;
  const chart = svg('svg', {
    width,
    height: height + 20,
    role: 'img',
    'aria-label': 'cost and cache-hit share per turn',
    'data-plot': 'turns',
  });
  const costs = turns.map((t) => t.cost ?? 0);
  const max = Math.max(...costs, 0) || 1;
  const w = turns.length === 0 ? 0 : (width - 40) / turns.length;
  chart.append(svg('line', { class: 'axis', x1: 40, y1: height, x2: width, y2: height }));
  const points = [];
  turns.forEach((t, i) => {
    const h = ((t.cost ?? 0) / max) * (height - 10);
    chart.append(svg('rect', { class: 'bar', x: 40 + i * w + 1, y: height - h, width: Math.max(1, w - 2), height: h }));
    const input = t.metadata.input_tokens;
    const share = typeof input === 'number' && input > 0 ? (t.metadata.cache_read_tokens ?? 0) / input : 0;
    points.push(`${40 + i * w + w / 2},${height - share * (height - 10)}`);
  });
  if (points.length > 0) chart.append(svg('polyline', { class: 'line', points: points.join(' ') }));
  chart.append(svg('text', { x: 0, y: 12 }, `cost ≤ ${Number(max.toPrecision(3))}; line: cache-hit share 0–100%`));
  return chart;
}

// ---- views ----------------------------------------------------------------------------------------------------

async function rootView(params) {
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

async function sessionsView(params) {
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

async function sessionView(id, params) {
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

async function exchangeView(id) {
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

async function budgetsView() {
  const b = await api('budgets');
  const rows = b.scopes.map((s) => {
    const max = s.limit?.max_cost ?? null;
    const width = 200;
    const bar = svg('svg', { width, height: 14, role: 'img', 'aria-label': `${s.scope} ${s.scope_id}` });
    if (max !== null && max > 0) {
      const settled = Math.min(1, s.settled_cost / max) * width;
      const reserved = Math.min(1 - settled / width, s.reserved_cost / max) * width;
      bar.append(svg('rect', { class: 'bar', x: 0, y: 0, width: settled, height: 14 }));
      bar.append(svg('rect', { class: 'reserved', x: settled, y: 0, width: Math.max(0, reserved), height: 14 }));
      bar.append(svg('rect', { x: 0, y: 0, width, height: 14, fill: 'none', stroke: 'currentColor' }));
    }
    return el(
      'tr',
      { 'data-scope': `${s.scope}:${s.scope_id}` },
      cell(s.scope, 'scope'),
      cell(s.scope_id, 'scope_id'),
      cell(num(s.requests), 'requests', 'num'),
      cell(money(s.settled_cost), 'settled_cost', 'num'),
      cell(money(s.reserved_cost), 'reserved_cost', 'num'),
      cell(max === null ? 'no cost limit' : money(max), 'max_cost', 'num'),
      el('td', {}, bar),
      cell(s.state, 'state', s.state),
    );
  });
  return [
    el('h1', {}, 'Budgets'),
    el(
      'p',
      {},
      `mode ${b.mode}, currency ${b.currency}, ${b.pending_reservations} reservations pending. Bars: settled (blue) and reserved (orange) against the limit.`,
    ),
    table(['scope', 'id', '#requests', '#settled', '#reserved', '#limit', 'use', 'state'], rows, {
      'data-table': 'budgets',
    }),
  ];
}

/** "in 3 d 4 h": how long until a period ends (as of this page's clock). */
function until(iso) {
  const ms = Date.parse(iso) - Date.now();
  if (!Number.isFinite(ms)) return '—';
  if (ms <= 0) return 'now';
  const minutes = Math.floor(ms / 60_000);
  const [d, h, m] = [Math.floor(minutes / 1440), Math.floor((minutes % 1440) / 60), minutes % 60];
  return `in ${d > 0 ? `${d} d ${h} h` : h > 0 ? `${h} h ${m} min` : `${m} min`}`;
}

async function periodsView() {
  const b = await api('budgets');
  const scopes = b.scopes.filter((s) => s.period);
  return [
    el('h1', {}, 'Budget periods'),
    el(
      'p',
      { class: 'muted' },
      'Scopes whose limit starts again each period (UTC): what the current period has spent against its limit, and when it resets. A call settles in the period it was admitted in.',
    ),
    scopes.length === 0
      ? el('p', { class: 'muted' }, 'No limit resets: set a period on a budget.limits kind (docs/production.md).')
      : table(
          [
            'scope',
            'id',
            'period',
            'from',
            '#tokens',
            '#token limit',
            '#cost',
            '#cost limit',
            '#used',
            'state',
            'resets at',
            'resets',
          ],
          scopes.map((s) =>
            el(
              'tr',
              { 'data-period': `${s.scope}:${s.scope_id}` },
              cell(s.scope, 'scope'),
              cell(s.scope_id, 'scope_id'),
              cell(s.period.every, 'every'),
              cell(s.period.start, 'start'),
              cell(num(s.settled_tokens + s.reserved_tokens), 'tokens', 'num'),
              cell(s.limit?.max_tokens === undefined ? 'none' : num(s.limit.max_tokens), 'max_tokens', 'num'),
              cell(money(s.settled_cost + s.reserved_cost), 'cost', 'num'),
              cell(s.limit?.max_cost === undefined ? 'none' : money(s.limit.max_cost), 'max_cost', 'num'),
              cell(pct(s.used_fraction), 'used', 'num'),
              cell(s.state, 'state', s.state),
              cell(s.period.end, 'end'),
              cell(until(s.period.end), 'resets_in'),
            ),
          ),
          { 'data-table': 'periods' },
        ),
  ];
}

async function breakersView() {
  const b = await api('breakers');
  return [
    el('h1', {}, 'Breakers'),
    b.breakers.length === 0
      ? el('p', { class: 'muted' }, 'No provider has failed yet: every breaker is CLOSED.')
      : null,
    table(
      ['provider/model', 'state', '#consecutive failures', 'opened'],
      b.breakers.map((k) =>
        el(
          'tr',
          { 'data-breaker': k.key },
          cell(k.key, 'key'),
          cell(k.state, 'state', k.state),
          cell(k.consecutive_failures, 'failures', 'num'),
          cell(k.opened_at ?? '—', 'opened_at'),
        ),
      ),
      { 'data-table': 'breakers' },
    ),
    el('h2', {}, 'Recent failures'),
    table(
      ['exchange', 'time', 'model', 'outcome', 'error'],
      b.recent_failures.map((f) =>
        el(
          'tr',
          {},
          el('td', {}, el('a', { href: `#/exchange/${encodeURIComponent(f.id)}` }, f.id)),
          cell(f.timestamp),
          cell(f.model_id ?? '—'),
          cell(f.outcome ?? '—'),
          cell(f.error_code ?? '—'),
        ),
      ),
      { 'data-table': 'failures' },
    ),
  ];
}

async function activityView() {
  const p = await api('plots');
  return [
    el('h1', {}, 'Activity'),
    el('p', { class: 'muted' }, `Over the newest ${num(p.window_entries)} ledger entries.`),
    el('h2', {}, 'Spend per hour'),
    barChart(
      p.spend.map((s) => s.cost),
      p.spend.map((s) => s.hour),
      { title: 'spend per hour' },
    ),
    el('h2', {}, 'Fallbacks per alias'),
    p.fallbacks.length === 0
      ? el(
          'p',
          { class: 'muted' },
          'No routed calls in this window (gateway.routing names no alias, or none was asked for).',
        )
      : table(
          ['alias', '#calls', '#answered after a fallback', '#fallback rate'],
          p.fallbacks.map((f) =>
            el(
              'tr',
              { 'data-alias': f.alias },
              cell(f.alias, 'alias'),
              cell(num(f.calls), 'calls', 'num'),
              cell(num(f.fallbacks), 'fallbacks', 'num'),
              cell(pct(f.rate), 'rate', 'num'),
            ),
          ),
          { 'data-table': 'fallbacks' },
        ),
    el('h2', {}, 'Latency distribution'),
    barChart(
      p.latency.map((b) => b.count),
      p.latency.map((b) => (b.le_ms === null ? '> 60000 ms' : `≤ ${b.le_ms} ms`)),
      { title: 'latency distribution' },
    ),
  ];
}

async function keysView() {
  const { keys } = await api('keys');
  return [
    el('h1', {}, 'Keys'),
    el(
      'p',
      { class: 'muted' },
      'The key inventory (KEY_ISSUED, KEY_ROTATED, KEY_REVOKED records). Keys themselves are never recorded or shown.',
    ),
    table(
      ['key id', 'agent', 'scopes', 'budget scope', 'state', 'expires', 'created', 'last used', '#spend'],
      keys.map((k) =>
        el(
          'tr',
          { 'data-key': k.key_id },
          cell(k.key_id, 'key_id', 'mono'),
          cell(k.agent, 'agent'),
          cell(k.scopes.join(' '), 'scopes'),
          cell(k.budget_scope ?? `key:${k.key_id}`, 'budget_scope'),
          cell(
            k.rotated_to ? `${k.state} (rotated to ${k.rotated_to})` : k.state,
            'state',
            k.state === 'active' ? 'ok' : k.state === 'grace' ? undefined : 'bad',
          ),
          cell(k.expires_at, 'expires_at'),
          cell(k.created_at, 'created_at'),
          cell(k.last_used_at ?? 'not since this gateway started', 'last_used_at'),
          cell(k.spend === null || k.spend === undefined ? 'none recorded' : money(k.spend.cost), 'spend', 'num'),
        ),
      ),
      { 'data-table': 'keys' },
    ),
    keys.length === 0
      ? el('p', { class: 'muted' }, 'No key was issued through the key admin API or `cplane token issue`.')
      : null,
  ];
}

// ---- routing --------------------------------------------------------------------------------------------------

async function route() {
  const main = document.getElementById('view');
  const [path, search = ''] = window.location.hash.replace(/^#/, '').split('?');
  const params = Object.fromEntries(new URLSearchParams(search));
  const parts = (path || '/root').split('/').filter(Boolean);
  let content;
  try {
    if (parts[0] === 'sessions') content = await sessionsView(params);
    else if (parts[0] === 'session' && parts[1]) content = await sessionView(decodeURIComponent(parts[1]), params);
    else if (parts[0] === 'exchange' && parts[1]) content = await exchangeView(decodeURIComponent(parts[1]));
    else if (parts[0] === 'budgets') content = await budgetsView();
    else if (parts[0] === 'periods') content = await periodsView();
    else if (parts[0] === 'breakers') content = await breakersView();
    else if (parts[0] === 'activity') content = await activityView();
    else if (parts[0] === 'keys') content = await keysView();
    else content = await rootView(params);
  } catch (error) {
    content = [el('p', { class: 'bad', id: 'error' }, String(error instanceof Error ? error.message : error))];
  }
  main.replaceChildren(...[content].flat(2).filter(Boolean));
  main.setAttribute('data-view', parts[0] ?? 'root');
}

window.addEventListener('hashchange', route);
route();
