import type { ConsoleAsset } from './assets.js';

/**
 * The console's HTML. Nothing dynamic is ever written into markup here but through `escapeHtml`; the views
 * are drawn by console.js with DOM text nodes, so prompt text can never become markup.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const NAV = `<nav>
  <a href="#/root">Root</a><a href="#/sessions">Sessions</a><a href="#/budgets">Budgets</a><a href="#/periods">Periods</a><a href="#/breakers">Breakers</a><a href="#/alerts">Alerts</a><a href="#/activity">Activity</a><a href="#/keys">Keys</a>
</nav>`;

/** The page a gateway serves at /console/: the shell console.js fills in. */
export function shellPage(options: { proofs: boolean } = { proofs: false }): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>cplane console</title>
<link rel="stylesheet" href="/console/assets/console.css">
<script type="module" src="/console/assets/console.js"></script>
</head><body>
<header><strong>cplane console</strong>${NAV}
<form method="post" action="/console/logout"><button type="submit">Sign out</button></form></header>
<main id="view" aria-live="polite"${options.proofs ? ' data-proofs="1"' : ''}>Loading…</main>
</body></html>`;
}

/** The sign-in page: one field for a console key; the key becomes an HttpOnly, SameSite=Strict cookie. */
export function loginPage(problem: string | null): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>cplane console: sign in</title>
<link rel="stylesheet" href="/console/assets/console.css">
</head><body>
<header><strong>cplane console</strong></header>
<main class="login">
<h1>Sign in</h1>
<p>Enter a key with the scope <code>console:read</code> (<code>cplane token issue --agent ADMIN --scope console:read</code>).</p>
${problem === null ? '' : `<p class="problem" id="problem">${escapeHtml(problem)}</p>`}
<form method="post" action="/console/login">
<label for="key">Console key</label>
<input id="key" name="key" type="password" autocomplete="off" required>
<button type="submit">Sign in</button>
</form>
</main>
</body></html>`;
}

/** Escapes JSON for a `<script type="application/json">` element: no `<`, `>` or `&` can end or open a tag. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * `cplane report --html`: one self-contained file. The stylesheet and script are inlined and allowed by their
 * digests in the page's own CSP; the data is a JSON element no browser executes.
 */
export function reportPage(data: unknown, assets: { js: ConsoleAsset; css: ConsoleAsset }): string {
  if (/<\/script/i.test(assets.js.bytes.toString('utf8')) || /<\/style/i.test(assets.css.bytes.toString('utf8')))
    throw new Error('a console asset holds a closing tag and cannot be inlined');
  const csp =
    `default-src 'none'; script-src '${assets.js.csp}'; style-src '${assets.css.csp}'; img-src data:; ` +
    "form-action 'none'; base-uri 'none'";
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">
<title>cplane report</title>
<style>${assets.css.bytes.toString('utf8')}</style>
<script type="application/json" id="cplane-data">${scriptJson(data)}</script>
<script type="module">${assets.js.bytes.toString('utf8')}</script>
</head><body>
<header><strong>cplane report</strong>${NAV}</header>
<main id="view" aria-live="polite">Loading…</main>
</body></html>`;
}
