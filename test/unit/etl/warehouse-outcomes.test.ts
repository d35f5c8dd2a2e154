/** Judging what a CREATE or RENAME whose answer was lost did, from the state read back. */
import { describe, expect, it } from 'vitest';
import { judgeLostCreate, judgeLostRename } from '../../../src/etl/warehouse/webhdfs-outcomes.js';

describe('judgeLostCreate', () => {
  const sentAll = { sentBytes: 1000, sentAll: true };

  it('counts a closed file of exactly the bytes sent as created', () => {
    expect(judgeLostCreate(sentAll, { length: 1000, underConstruction: false })).toBe('created');
  });

  it('says absent when there is no file', () => {
    expect(judgeLostCreate(sentAll, undefined)).toBe('absent');
    expect(judgeLostCreate({ sentBytes: 0, sentAll: false }, undefined)).toBe('absent');
  });

  it('never counts a file as created unless everything was sent, it is closed, and the length matches', () => {
    expect(judgeLostCreate(sentAll, { length: 1000, underConstruction: true })).toBe('incomplete');
    expect(judgeLostCreate(sentAll, { length: 1000, underConstruction: undefined })).toBe('incomplete');
    expect(judgeLostCreate(sentAll, { length: 999, underConstruction: false })).toBe('incomplete');
    expect(judgeLostCreate(sentAll, { length: 1001, underConstruction: false })).toBe('incomplete');
    expect(judgeLostCreate({ sentBytes: 1000, sentAll: false }, { length: 1000, underConstruction: false })).toBe('incomplete');
  });
});

describe('judgeLostRename', () => {
  it.each([
    [false, true, 'renamed'],
    [true, false, 'not-renamed'],
    [true, true, 'target-exists'],
    [false, false, 'unknown'],
  ] as const)('source there: %s, target there: %s → %s', (sourceExists, targetExists, verdict) => {
    expect(judgeLostRename(sourceExists, targetExists)).toBe(verdict);
  });
});
