/** `/metrics` read as Prometheus reads it: parsed with a text-format parser (prom2javascript), then summed by labels. */
import { getMetricsFromIterator, type PromData, type PromHistogramData, type PromMetrics } from 'prom2javascript';

export interface Scrape {
  /** The families by name, as the parser gives them. */
  families: PromMetrics;
  /** The sum of a counter's or gauge's samples whose labels include `labels` (0 when none). */
  value(name: string, labels?: Record<string, string>): number;
  /** A histogram's observation count over the samples whose labels include `labels`. */
  count(name: string, labels?: Record<string, string>): number;
}

export async function scrape(url: string, headers: Record<string, string> = {}): Promise<Scrape> {
  const response = await fetch(url, { headers });
  if (!response.ok) throw new Error(`GET ${url}: ${response.status} ${await response.text()}`);
  const families = await getMetricsFromIterator((await response.text()).split('\n')[Symbol.iterator]());
  const samples = <Sample extends { labels: Record<string, string> }>(name: string, labels: Record<string, string>) =>
    ((families[name]?.data ?? []) as unknown as Sample[]).filter((sample) =>
      Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
    );
  return {
    families,
    value: (name, labels = {}) => samples<PromData>(name, labels).reduce((sum, sample) => sum + sample.value, 0),
    count: (name, labels = {}) =>
      samples<PromHistogramData>(name, labels).reduce((sum, sample) => sum + sample.count, 0),
  };
}
