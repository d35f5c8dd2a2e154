/**
 * Bull Board, mounted at BULL_BOARD_PATH, showing the queues QueueSource finds. Bull Board keeps
 * its own list of queues; it is replaced whenever the source finds a different set, and the
 * source is asked again (at most every REFRESH_MS) whenever Bull Board's page or its polling asks
 * for the queue list, so a queue created after the dashboard started shows up on the next poll.
 */
import { createBullBoard } from '@bull-board/api';
import type { IServerAdapter } from '@bull-board/api/typings/app';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../common/logger.js';
import type { QueueSource } from './sources/queue-source.js';

export const BULL_BOARD_PATH = '/queues';
const REFRESH_MS = 2_000;

export interface BullBoardOptions {
  /** Bull Board without retry, promote, clean, pause and delete buttons. */
  readonly readOnly: boolean;
  readonly logger: Logger;
}

export async function mountBullBoard(app: FastifyInstance, source: QueueSource, options: BullBoardOptions): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  const board = createBullBoard({
    queues: [],
    // @bull-board/fastify 9.10.1 (the latest) brings its own copy of @bull-board/api 9.10.1 beside
    // ours (9.10.2): the same adapter interface declared twice, which TypeScript tells apart by a
    // private field. At run time the adapter only calls what it is handed.
    serverAdapter: serverAdapter as unknown as IServerAdapter,
    options: { uiConfig: { boardTitle: 'Tributary queues', miscLinks: [{ text: 'Tributary dashboard', url: '/' }], hideDocsLink: true } },
  });
  source.onChange((queues) => board.replaceQueues(queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: options.readOnly, allowRetries: !options.readOnly }))));

  let lastRefresh = 0;
  let refreshing: Promise<unknown> | undefined;
  const refresh = async (): Promise<void> => {
    if (Date.now() - lastRefresh < REFRESH_MS) return;
    refreshing ??= source
      .refresh()
      .then(() => (lastRefresh = Date.now()))
      // Redis down: Bull Board answers from the queues it has and shows Redis's own errors.
      .catch((error: unknown) => options.logger.warn({ err: error }, 'cannot list the queues in Redis'))
      .finally(() => (refreshing = undefined));
    await refreshing;
  };
  await refresh();

  await app.register(
    async (scope) => {
      scope.addHook('onRequest', async (request) => {
        const path = request.url.split('?')[0] ?? '';
        // The page itself and the queue list it polls; not its scripts, styles and job calls.
        if (path === BULL_BOARD_PATH || path === `${BULL_BOARD_PATH}/` || path === `${BULL_BOARD_PATH}/api/queues`) await refresh();
      });
      await scope.register(serverAdapter.registerPlugin());
    },
    { prefix: BULL_BOARD_PATH },
  );
}
