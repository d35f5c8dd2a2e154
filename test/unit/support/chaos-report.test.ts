/**
 * The replication chaos run's reports (test/chaos/replication.ts): one line per scenario, and the
 * results table it writes into docs/reliability.md between its markers, leaving the prose alone.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatResultLine, formatResultsTable, TABLE_END, TABLE_START, updateReliabilityDoc, type ScenarioResult } from '../../chaos/replication.js';
import { temporaryDirectory } from '../storage/helpers.js';

const passed: ScenarioResult = {
  scenario: 'leader-kill',
  rounds: 50,
  faults: 50,
  acknowledged: 123_456,
  lost: 0,
  unseen: 0,
  duplicated: 0,
  unknown: 3,
  leaderTimes: [5_000, 6_000, 9_000],
  violations: [],
  notes: [],
  seconds: 700,
};
const failed: ScenarioResult = { ...passed, scenario: 'power-loss', lost: 2, unseen: 1, violations: ['I1 lost: value 7 | acknowledged at partition 0 offset 3', 'I3 vanished: …'], notes: ['10 rounds with all three brokers'] };
const facts = { startedAt: new Date('2026-11-20T10:00:00Z'), endedAt: new Date('2026-11-20T11:30:00Z'), seed: 42, rate: 200, segmentBytes: 65_536, loadAtStart: [1, 2, 3], loadAtEnd: [0.5, 1, 1.5], rounds: undefined, commit: 'abc1234' };

describe('replication chaos reports', () => {
  it('prints one line per scenario with the figures the issue asks for', () => {
    expect(formatResultLine(passed)).toBe(
      'leader-kill ×50: 50 faults injected, 123456 acknowledged, 0 lost, 0 duplicated, 0 unseen, time to new leader median 6.0 s max 9.0 s (3 measured), 0 violations in 700 s',
    );
  });

  it('tabulates each scenario, a failure with its first violations (pipes escaped), and says when and at what load it ran', () => {
    const table = formatResultsTable([passed, failed], facts);
    const lines = table.split('\n');
    expect(lines[0]).toContain('2026-11-20 10:00–11:30 UTC at commit `abc1234`, full counts, seed 42');
    expect(lines[0]).toContain('load average 1.00 2.00 3.00 at the start and 0.50 1.00 1.50 at the end');
    expect(lines).toContain('| leader-kill ×50 | 50 | I1–I7; a new leader for every kill | pass | 123456 | 0 | 0 | 0 | 6.0 s / 9.0 s (3) | – | 700 s |');
    const failure = lines.find((line) => line.startsWith('| power-loss'));
    expect(failure).toContain('**FAIL** (2 violations: I1 lost: value 7 \\| acknowledged');
    expect(failure).toContain('| 2 | 0 | 1 |');
  });

  it('replaces only the text between the markers, or appends a section when there are none', () => {
    const directory = temporaryDirectory();
    const file = join(directory, 'reliability.md');
    writeFileSync(file, `# Reliability\n\nProse before.\n\n${TABLE_START}\nold table\n${TABLE_END}\n\nProse after.\n`);
    updateReliabilityDoc(file, 'new table');
    expect(readFileSync(file, 'utf8')).toBe(`# Reliability\n\nProse before.\n\n${TABLE_START}\nnew table\n${TABLE_END}\n\nProse after.\n`);
    const bare = join(directory, 'bare.md');
    writeFileSync(bare, '# Reliability\n');
    updateReliabilityDoc(bare, 'a table');
    expect(readFileSync(bare, 'utf8')).toBe(`# Reliability\n\n## Replication chaos results\n\n${TABLE_START}\na table\n${TABLE_END}\n`);
  });
});
