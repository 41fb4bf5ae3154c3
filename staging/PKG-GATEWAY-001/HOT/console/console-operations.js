// The operator's views: budgets, their periods, breakers, activity and keys (alerts: console-alerts.js).
import { barChart } from './console-charts.js';
import { api } from './console-data.js';
import { cell, el, money, num, pct, svg, table } from './console-dom.js';

export async function budgetsView() {
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

export async function periodsView() {
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

export async function breakersView() {
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

export async function activityView() {
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

export async function keysView() {
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
