// The console's data: the gateway's /console/api/*, or the copy a report embeds.

const embedded = document.getElementById('cplane-data');
export const REPORT = embedded === null ? null : JSON.parse(embedded.textContent);
const PAGE = 50;

export async function api(name, params = {}) {
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
