/** The settings the cleaner crash worker and its checker share (test/support/cleaner-crash-worker.ts, test/chaos/compaction.ts). */
import { DEFAULT_CLEANER_CONFIG } from '../../src/storage/cleaner/log-cleaner.js';

export const CRASH_TOPIC = 'compacted';
export const CRASH_LOG_CONFIG = { cleanupPolicy: 'compact', segmentBytes: 2048, indexIntervalBytes: 256, flushMessages: 1, deleteRetentionMs: 1000 } as const;
/** 60 slots of 24 bytes at load factor 0.9: 54 keys a pass, for 80 keys written (partial passes). */
export const CRASH_CLEANER = { ...DEFAULT_CLEANER_CONFIG, dedupeBufferSize: 60 * 24 };
export const CRASH_KEYS = 80;
