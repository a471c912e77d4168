/**
 * A small time chart in SVG, with its axes and units: one value per minute, as stacked bars (counts)
 * or a line (a rate). The y axis runs from 0 to a round maximum with three ticks; the x axis marks
 * every 15 minutes with the local time. Built with svg() (attributes and text nodes only).
 */
import { svg } from '../dom.js';

const WIDTH = 560;
const HEIGHT = 170;
const LEFT = 44;
const BOTTOM = 22;
const TOP = 8;

export interface Series {
  name: string;
  /** A CSS class: its colour. */
  class: string;
  /** One value per minute, oldest first; `null` for no value (a gap in a line). */
  values: ReadonlyArray<number | null>;
}

export function timeChart(options: {
  kind: 'bars' | 'line';
  series: readonly Series[];
  start: string;
  unit: string;
  max?: number;
  label: string;
}): SVGElement {
  const minutes = options.series[0]?.values.length ?? 0;
  const stacked = Array.from({ length: minutes }, (_, index) =>
    options.series.reduce((sum, series) => sum + (series.values[index] ?? 0), 0),
  );
  const top =
    options.max ??
    niceMax(
      options.kind === 'bars'
        ? Math.max(0, ...stacked)
        : Math.max(0, ...options.series.flatMap((series) => series.values.map((value) => value ?? 0))),
    );
  const plotWidth = WIDTH - LEFT - 6;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const x = (index: number) => LEFT + (index / Math.max(1, minutes)) * plotWidth;
  const y = (value: number) => TOP + plotHeight - (top ? (value / top) * plotHeight : 0);
  const chart = svg('svg', {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    class: `time-chart ${options.kind}`,
    role: 'img',
    'aria-label': options.label,
  });

  // Axes: y ticks at 0, half and the top, with the unit; x ticks every 15 minutes.
  for (const value of [0, top / 2, top]) {
    chart.append(svg('line', { class: 'grid', x1: LEFT, x2: WIDTH - 6, y1: y(value), y2: y(value) }));
    chart.append(
      svg('text', { class: 'tick', x: LEFT - 6, y: y(value) + 4, 'text-anchor': 'end' }, formatValue(value)),
    );
  }
  chart.append(svg('text', { class: 'unit', x: 2, y: TOP + 10 }, options.unit));
  const start = Date.parse(options.start);
  for (let index = 0; index <= minutes; index += 15) {
    const at = new Date(start + index * 60_000);
    chart.append(
      svg('line', { class: 'axis', x1: x(index), x2: x(index), y1: TOP + plotHeight, y2: TOP + plotHeight + 4 }),
    );
    const anchor = index === 0 ? 'start' : index + 15 > minutes ? 'end' : 'middle';
    chart.append(
      svg(
        'text',
        { class: 'tick', x: x(index), y: HEIGHT - 6, 'text-anchor': anchor },
        at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }),
      ),
    );
  }
  chart.append(svg('line', { class: 'axis', x1: LEFT, x2: WIDTH - 6, y1: TOP + plotHeight, y2: TOP + plotHeight }));

  if (options.kind === 'bars') {
    const barWidth = Math.max(1, plotWidth / Math.max(1, minutes) - 1);
    for (let index = 0; index < minutes; index++) {
      let base = 0;
      for (const series of options.series) {
        const value = series.values[index] ?? 0;
        if (value > 0)
          chart.append(
            svg(
              'rect',
              {
                class: series.class,
                x: x(index),
                y: y(base + value),
                width: barWidth,
                height: y(base) - y(base + value),
              },
              svg('title', {}, `${series.name}: ${value} ${options.unit}`),
            ),
          );
        base += value;
      }
    }
  } else {
    for (const series of options.series) {
      // A line through the minutes that have a value; a minute without one breaks it.
      let path = '';
      series.values.forEach((value, index) => {
        if (value === null) return;
        path += `${path && series.values[index - 1] !== null ? 'L' : 'M'}${x(index + 0.5).toFixed(1)},${y(value).toFixed(1)}`;
      });
      chart.append(svg('path', { class: `line ${series.class}`, d: path || 'M0,0' }));
      // A dot on each minute with a value: a lone minute shows too.
      series.values.forEach((value, index) => {
        if (value !== null)
          chart.append(
            svg(
              'circle',
              { class: `dot ${series.class}`, cx: x(index + 0.5), cy: y(value), r: 2.5 },
              svg('title', {}, `${series.name}: ${value} ${options.unit}`),
            ),
          );
      });
    }
  }
  return chart;
}

/** 0, or the smallest of 1, 2, 5 × 10^n at or above `value`. */
function niceMax(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((step) => step * power).find((candidate) => candidate >= value)!;
}

function formatValue(value: number): string {
  return value >= 1000 ? `${(value / 1000).toFixed(value % 1000 ? 1 : 0)}k` : String(Math.round(value * 10) / 10);
}
