// The cplane console: draws each view from the gateway's /console/api/* (or, in a report, from the JSON the
// page embeds) with DOM text nodes only. No markup is ever built from data, so prompt text stays text. Each job is
// a module of its own (console-*.js); this one routes the page's hash to a view.
import { alertsView } from './console-alerts.js';
import { el } from './console-dom.js';
import { exchangeView } from './console-exchange.js';
import { activityView, breakersView, budgetsView, keysView, periodsView } from './console-operations.js';
import { rootView, sessionView, sessionsView } from './console-sessions.js';

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
    else if (parts[0] === 'alerts') content = await alertsView();
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
