/**
 * Starts the API on its address, with its Redis connections; `close` stops it cleanly. It listens on
 * loopback unless told otherwise, and refuses to open any other address without API keys.
 */
import type { AddressInfo } from 'node:net';
import { apiKeys, ConfigError, redisTarget, isLoopbackHost, type Config } from '@agentq/config';
import { closeConnection, connectRedis, EventHub, redisReady, warnIfEvicting, watchRedis } from '@agentq/store';
import { composeInstall, type Install } from '@agentq/tasks';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { createLogger, createMetrics, startTracing, TaskTelemetry, type Logger } from '@agentq/telemetry';
import { ApiError, errorBody, statusFor } from './api-error.js';
import { createApiServer } from './api-server.js';
import { createApp } from './create-app.js';

export interface ApiHandle {
  /** Where a client on this machine reaches it (loopback when it listens on every interface). */
  url: string;
  /** The address it really listens on, e.g. `127.0.0.1:8080` or `0.0.0.0:8080`. */
  listening: string;
  port: number;
  logger: Logger;
  /** What it built from the configuration (composeInstall): the install's keys, store, queues and services. */
  install: Install;
  close(): Promise<void>;
}

export async function startApi(options: { config: Config; host?: string; logger?: Logger }): Promise<ApiHandle> {
  const { config } = options;
  const host = options.host ?? config.AGENTQ_HOST;
  const keyed = apiKeys(config).length > 0;
  if (!isLoopbackHost(host) && !keyed && !config.AGENTQ_ALLOW_NO_AUTH) {
    throw new ConfigError(
      `AGENTQ_HOST=${host} would let anyone who reaches this port run code through the agents, and no API keys are set. ` +
        'Give tenants keys in the configuration file (tenants: {my-team: {keys: [{env: MY_TEAM_KEY}]}}, the key in MY_TEAM_KEY), or keep the default AGENTQ_HOST=127.0.0.1; ' +
        'AGENTQ_ALLOW_NO_AUTH=1 opens it without keys anyway.',
    );
  }
  const logger =
    options.logger ??
    createLogger({ name: 'agentq-api', level: config.AGENTQ_LOG_LEVEL, format: config.AGENTQ_LOG_FORMAT });
  const metrics = createMetrics();
  const tracing = startTracing({
    endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
    serviceName: config.OTEL_SERVICE_NAME ?? 'agentq-api',
  });
  // Requests are answered 503 while Redis is away; ioredis reconnects; the log says it once.
  const redis = connectRedis({ ...redisTarget(config), name: 'agentq-api', failFast: true });
  watchRedis(redis, { label: 'agentq api', log: (line) => logger.warn(line) });
  const subscriber = connectRedis({ ...redisTarget(config), name: 'agentq-api-events', subscriber: true });
  // Its connection's errors are said once by watchRedis (above); a follower's read fails where it is made.
  subscriber.on('error', () => undefined);
  // Serve once Redis answers; without it for long, serve anyway: /readyz and the data routes say 503.
  await redisReady(redis, 5_000);
  // Said at start, as an error: a Redis that evicts keys loses tasks without a trace.
  void warnIfEvicting(redis, (line) => logger.error(line));
  // The API's one connection carries BullMQ's calls too: it only adds jobs, never blocks on them. An
  // install it cannot open (its cell count refused or unknown) leaves nothing connected behind it.
  const install = await composeInstall({ config, data: redis, queueConnection: redis, logger }).catch(
    async (error: unknown) => {
      await Promise.all([closeConnection(redis), closeConnection(subscriber), tracing.shutdown()]);
      throw error;
    },
  );
  // What the API itself ends (a cancel of a queued task) is logged and counted like a worker's ends.
  const telemetry = new TaskTelemetry({ logger, metrics });
  // A delivery the API's own commit added (a cancel's) is told to the workers' senders.
  install.store.observe((commit) => {
    telemetry.observe(commit);
    // A wake-up only: a sender that misses it finds the delivery at its next poll.
    if (commit.delivery) install.deliveries.notify().catch(() => undefined);
  });
  const hub = new EventHub(subscriber, install.keys, redis);
  const app = createApp({ config, install, hub, redis, logger, metrics, tracing });
  const server = createApiServer({ app, perAddress: config.AGENTQ_CONNECTIONS_PER_ADDRESS });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('clientError', answerClientError);
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const everywhere = address.address === '0.0.0.0' || address.address === '::';
  return {
    url: `http://${everywhere ? '127.0.0.1' : shown}:${address.port}`,
    listening: `${shown}:${address.port}`,
    port: address.port,
    logger,
    install,
    async close() {
      logger.info('stopping: closing connections');
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await install.close();
      // The followers' streams just closed, and the subscriber may still be unsubscribing from their
      // tasks: a connection whose QUIT is not answered (that, or Redis away) is closed all the same.
      await Promise.all([closeConnection(redis), closeConnection(subscriber), tracing.shutdown()]);
      logger.info('stopped');
    },
  };
}

/**
 * A request Node's HTTP parser refused before Express saw it (a request head over 16 KiB, broken
 * HTTP): answered in the same JSON shape rather than with an empty reply.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const apiError =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new ApiError(
          'headers_too_large',
          'The request line and headers are larger than 16 KiB: shorten the URL (task ids are short) and the headers.',
        )
      : new ApiError('invalid_request', `The request is not valid HTTP (${error.code ?? error.message}).`);
  const status = statusFor(apiError.code);
  const body = errorBody(apiError);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
