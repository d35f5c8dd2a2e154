/**
 * Reads the V8 CPU profiles the Tributary broker wrote (node --cpu-prof, one per broker start)
 * and sums self time per function and per source file, so the report can say where the broker
 * spent its CPU. Idle time is left out of the percentages.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { ProfileSummary } from './results.js';

interface CpuProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly hitCount?: number;
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly CpuProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples?: readonly number[];
  readonly timeDeltas?: readonly number[];
}

const NOT_WORK = new Set(['(idle)', '(root)']);

function shortPath(url: string, root: string): string {
  if (url === '') return '(native)';
  const path = url.startsWith('file://') ? new URL(url).pathname : url;
  const rel = relative(root, path);
  return rel.startsWith('..') ? path : rel;
}

export function summarizeProfiles(dir: string, root: string, top = 15): ProfileSummary | undefined {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, f));
  } catch {
    return undefined;
  }
  if (files.length === 0) return undefined;
  const byFunction = new Map<string, { name: string; where: string; micros: number; callers: Map<string, number> }>();
  const byFile = new Map<string, number>();
  let busy = 0;
  let sampled = 0;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    const parents = new Map<number, CpuProfileNode>();
    for (const n of profile.nodes) for (const child of n.children ?? []) parents.set(child, n);
    const label = (n: CpuProfileNode): string => {
      const where = n.callFrame.url === '' ? '' : ` ${shortPath(n.callFrame.url, root)}`;
      return `${n.callFrame.functionName || '(anonymous)'}${where}`;
    };
    const samples = profile.samples ?? [];
    const deltas = profile.timeDeltas ?? [];
    sampled += (profile.endTime - profile.startTime) / 1e6;
    for (let i = 0; i < samples.length; i += 1) {
      const node = nodes.get(samples[i] ?? -1);
      // Each sample's time is the delta to the next one.
      const micros = deltas[i + 1] ?? 0;
      if (node === undefined || micros <= 0) continue;
      const name = node.callFrame.functionName || '(anonymous)';
      if (NOT_WORK.has(name)) continue;
      busy += micros;
      // Sources run through tsx report line 0 for everything: a line is shown only when known.
      const where = `${shortPath(node.callFrame.url, root)}${node.callFrame.url === '' || node.callFrame.lineNumber <= 0 ? '' : `:${node.callFrame.lineNumber + 1}`}`;
      const key = `${name} ${where}`;
      const entry = byFunction.get(key) ?? { name, where, micros: 0, callers: new Map<string, number>() };
      entry.micros += micros;
      // The nearest caller in the project's own code (natives and node's internals are reached through wrappers),
      // else the nearest JavaScript caller.
      let parent = parents.get(node.id);
      let nearestJs: CpuProfileNode | undefined;
      while (parent !== undefined && (parent.callFrame.url === '' || parent.callFrame.url.startsWith('node:'))) {
        if (nearestJs === undefined && parent.callFrame.url !== '') nearestJs = parent;
        parent = parents.get(parent.id);
      }
      parent ??= nearestJs ?? parents.get(node.id);
      if (parent !== undefined) entry.callers.set(label(parent), (entry.callers.get(label(parent)) ?? 0) + micros);
      byFunction.set(key, entry);
      const fileKey = name.startsWith('(') ? name : shortPath(node.callFrame.url, root);
      byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + micros);
    }
  }
  if (busy === 0) return undefined;
  const percent = (micros: number): number => Math.round((micros / busy) * 1000) / 10;
  return {
    files,
    sampledSeconds: Math.round(sampled),
    topFunctions: [...byFunction.values()].sort((a, b) => b.micros - a.micros).slice(0, top)
      .map((f) => {
        const [caller, callerMicros] = [...f.callers.entries()].sort((a, b) => b[1] - a[1])[0] ?? ['', 0];
        return { name: f.name, where: f.where, selfPercent: percent(f.micros), calledFrom: caller === '' ? '' : `${caller} (${Math.round((callerMicros / f.micros) * 100)}%)` };
      }),
    topFiles: [...byFile.entries()].sort((a, b) => b[1] - a[1]).slice(0, top).map(([file, micros]) => ({ file, selfPercent: percent(micros) })),
  };
}
