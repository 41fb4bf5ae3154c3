// A prompt as the conversation the server read from it (conversation.ts), and a response's blocks.
import { el } from './console-dom.js';

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
export function conversation(items, pieces) {
  if (items === null || items === undefined)
    return pieces.map((text) =>
      el('div', { class: /\[REDACTED:/.test(text) ? 'piece redacted' : 'piece' }, el('pre', {}, text)),
    );
  const settings = items.filter((x) => x.kind === 'setting').map((x) => `${x.name}: ${x.value}`);
  const shown = items.map(item).filter(Boolean);
  if (settings.length === 0) return shown;
  return [el('p', { class: 'muted mono', 'data-field': 'settings' }, settings.join(' · ')), ...shown];
}

export function response(text) {
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
