/** Medians, percentiles and the alternation of a measured variant with its reference. */

/** The p-th percentile of a list of numbers (nearest rank). */
export function percentile(list, p) {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const median = (list) => percentile(list, 50);

/**
 * Runs `variants` (name -> async function returning a sample, or a list of samples) in turn, round
 * after round, so that the machine's noise falls on all alike; returns name -> every sample.
 */
export async function alternate(variants, rounds) {
  const samples = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of Object.entries(variants)) {
      const sample = await run(round);
      samples[name].push(...(Array.isArray(sample) ? sample : [sample]));
    }
  }
  return samples;
}
