/** One call of agentq's HTTP API as a client makes it: JSON in, JSON (or nothing) out. */

export interface ApiAnswer<T> {
  status: number;
  /** The parsed body; undefined when there is none (a 204). */
  body: T;
  /** The body as sent, and its size in bytes. */
  text: string;
  bytes: number;
  headers: Headers;
}

/** Calls `method url` at `baseUrl`, with `key` as its bearer token (none when undefined). */
export async function apiCall<T = unknown>(
  baseUrl: string,
  key: string | undefined,
  method: string,
  url: string,
  body?: unknown,
): Promise<ApiAnswer<T>> {
  const response = await fetch(`${baseUrl}${url}`, {
    method,
    headers: {
      accept: 'application/json',
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: (text ? JSON.parse(text) : undefined) as T,
    text,
    bytes: Buffer.byteLength(text),
    headers: response.headers,
  };
}
