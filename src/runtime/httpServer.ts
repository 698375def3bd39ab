import { maxHeaderSize, type Server } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Config } from '../config.js';
import { errorBody } from '../http/errors.js';
import { answersPerTurn } from './answersPerTurn.js';
import { HostUnavailable, PortInUse } from './startFailure.js';

/** The API's HTTP server: listening (with a clear error when the port is taken) and a graceful close. */

/** How long requests already being answered may take to finish once a stop begins. */
export const SHUTDOWN_DEADLINE_MS = 10_000;

/** What listening answers when HOST cannot be resolved or is not an address of this machine. */
const HOST_ERRORS = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EADDRNOTAVAIL', 'EAI_FAIL', 'EAI_NONAME']);

export function listen(fetch: (request: Request) => Response | Promise<Response>, config: Pick<Config, 'port' | 'host'>): Promise<ServerType> {
  return new Promise<ServerType>((resolve, reject) => {
    const started = serve({ fetch: answersPerTurn(fetch), port: config.port, hostname: config.host }, () => {
      started.off('error', onError);
      resolve(started);
    });
    started.on('clientError', answerClientError);
    const onError = (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') reject(new PortInUse(config.port, config.host));
      else if (error.code && HOST_ERRORS.has(error.code)) reject(new HostUnavailable(config.host, error.code));
      else reject(error);
    };
    started.once('error', onError);
  });
}

/**
 * A request Node's HTTP parser refuses before any route sees it (a URL or headers over Node's
 * limit, bytes that are not HTTP): answered as Node answers it (431, 400, 408), but with the
 * spec's Error body, then the connection is closed.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket & { _httpMessage?: { headersSent: boolean } | null }): void {
  // As Node decides: answer unless an answer on this connection (keep-alive) has begun already.
  if (!socket.writable || socket._httpMessage?.headersSent || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const [status, reason, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', `the request's URL and headers are larger than ${maxHeaderSize / 1024} KB`]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'the request was not received in time']
        : [400, 'Bad Request', 'the request is not valid HTTP'];
  const body = JSON.stringify(errorBody(status, message));
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/**
 * How long a stop keeps answering on connections that are already open before it closes the idle
 * ones. A kept-alive client sends its next request as soon as it has read an answer: a connection
 * closed while idle at that moment meets the request on its way, and the client sees a reset. Every
 * answer of the stop says `Connection: close`, so busy clients leave by themselves within this.
 */
export const DRAIN_GRACE_MS = 1_000;

/**
 * Stops accepting at once, answers for DRAIN_GRACE_MS what arrives on connections already open
 * (each answer then closes its connection), then closes the idle ones as they become idle, and cuts
 * what is still open at the deadline. Resolves when the last connection is gone.
 */
export async function closeGracefully(server: ServerType, deadlineMs: number, graceMs = Math.min(DRAIN_GRACE_MS, deadlineMs)): Promise<void> {
  const http = server as Server;
  http.on('request', (_request, response) => {
    if (!response.headersSent) response.setHeader('Connection', 'close');
  });
  // net.Server's own close stops accepting only: http.Server's (Node 19 and later) also closes
  // every idle kept-alive connection at once, the race this drain avoids.
  const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(http, () => resolve()));
  let idleSweep: NodeJS.Timeout | undefined;
  const grace = setTimeout(() => {
    http.closeIdleConnections();
    idleSweep = setInterval(() => http.closeIdleConnections(), 20);
  }, graceMs);
  const deadline = setTimeout(() => http.closeAllConnections(), deadlineMs);
  try {
    await closed;
  } finally {
    clearTimeout(grace);
    clearInterval(idleSweep);
    clearTimeout(deadline);
  }
}
