// Plots, drawn as SVG elements.
import { svg } from './console-dom.js';

export function barChart(values, labels, { width = 640, height = 160, title, cls = 'bar' } = {}) {
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

export function turnPlot(turns) {
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
