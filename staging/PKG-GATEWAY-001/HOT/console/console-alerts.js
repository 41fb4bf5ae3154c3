// The alerts view: what the gateway delivered to the operator's webhook (ALERT_SENT records), newest first.
import { api } from './console-data.js';
import { cell, el, table } from './console-dom.js';

export async function alertsView() {
  const a = await api('alerts');
  return [
    el('h1', {}, 'Alerts'),
    el(
      'p',
      { class: 'muted' },
      'Budget warnings and exhaustion, breakers opening and closing, quarantined entries: each delivered at least once.',
    ),
    a.recent_alerts.length === 0
      ? el('p', { class: 'muted' }, 'No alert has been delivered to the webhook recently.')
      : null,
    table(
      ['time', 'type', 'alert', 'attempts', 'occurred'],
      a.recent_alerts.map((r) =>
        el(
          'tr',
          { 'data-alert': r.alert_id ?? '' },
          cell(r.timestamp),
          cell(r.type ?? '—', 'type'),
          cell(r.alert_id ?? '—', 'alert_id'),
          cell(r.attempts ?? '—', 'attempts', 'num'),
          cell(r.occurred_at ?? '—'),
        ),
      ),
      { 'data-table': 'alerts' },
    ),
  ];
}
