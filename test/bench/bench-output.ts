/** What every benchmark script shares: sizes from BENCH_* variables and how figures are printed. */

/** A positive integer from the environment variable `name`, or `fallback` when it is unset. */
export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, not "${raw}"`);
  return value;
}

export const fmt = (n: number, digits = 1): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
export const fmtInt = (n: number): string => Math.round(n).toLocaleString('en-US');
export const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
