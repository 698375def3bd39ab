import { maxHeaderSize, type Server } from 'node:http';
import type { Socket } from 'node:net';
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
 * Stops accepting at once, lets the requests being answered finish (each answer then closes its
 * connection, so a keep-alive client cannot slip in another request), and cuts what is still open
 * at the deadline. Resolves when the last connection is gone.
 */
export async function closeGracefully(server: ServerType, deadlineMs: number): Promise<void> {
  const http = server as Server;
  http.on('request', (_request, response) => {
    if (!response.headersSent) response.setHeader('Connection', 'close');
  });
  const closed = new Promise<void>((resolve) => http.close(() => resolve()));
  http.closeIdleConnections();
  const idleSweep = setInterval(() => http.closeIdleConnections(), 20);
  const deadline = setTimeout(() => http.closeAllConnections(), deadlineMs);
  try {
    await closed;
  } finally {
    clearInterval(idleSweep);
    clearTimeout(deadline);
  }
}
