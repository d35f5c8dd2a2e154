import { BufferPool } from '../common/buffer-pool.js';

/**
 * The broker's one pool of large buffers (common/buffer-pool.ts): request frames copied out of
 * socket chunks (connection.ts) and file ranges read for fetch answers (response-writer.ts).
 * 16 KiB to 4 MiB, at most 4 idle per size class: at most ~32 MiB idle.
 */
export const brokerBuffers = new BufferPool(16 * 1024, 4 * 1024 * 1024, 4);
