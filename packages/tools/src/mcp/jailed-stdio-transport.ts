/**
 * The MCP stdio transport over a server the jail runs (jail.startServer): newline-delimited JSON-RPC
 * on its stdin and stdout. The SDK's own StdioClientTransport spawns its process itself, with the
 * caller's environment; this one is handed a process the jail started. A line (an answer) is read up
 * to `maxAnswerBytes`: a server that writes more without a line end is ended (capped-answers.ts).
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { JailedServer } from '../jail.js';

/** What a server wrote on stderr last, kept for the message of its death. */
const STDERR_KEPT = 2_000;

export class JailedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The server wrote a line longer than the bound, and was ended for it. */
  answerTooLarge = false;
  private readonly buffer: ReadBuffer;
  private stderr = '';
  private closed = false;

  constructor(
    private readonly server: JailedServer,
    maxAnswerBytes: number,
  ) {
    this.buffer = new ReadBuffer({ maxBufferSize: maxAnswerBytes });
  }

  /** The end of what the server wrote on stderr (why it failed, often). */
  lastStderr(): string {
    return this.stderr.trim();
  }

  async start(): Promise<void> {
    const child = this.server.process;
    child.stdout?.on('data', (chunk: Buffer) => {
      try {
        this.buffer.append(chunk);
      } catch (error) {
        // A line past the bound: nothing more of it is read. The server is ended (its calls fail, saying
        // why; the next call starts it again), and nothing is thrown here, where it would end the worker.
        this.answerTooLarge = true;
        this.onerror?.(error as Error);
        void this.server.stop();
        return;
      }
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.buffer.readMessage();
        } catch (error) {
          this.onerror?.(error as Error);
          continue;
        }
        if (!message) break;
        this.onmessage?.(message);
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_KEPT);
    });
    child.stdin?.on('error', (error) => this.onerror?.(error));
    child.once('exit', () => this.finish());
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.server.process.stdin;
      if (!stdin || this.closed) return reject(new Error('the MCP server has ended'));
      stdin.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()));
    });
  }

  async close(): Promise<void> {
    await this.server.stop();
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.buffer.clear();
    this.onclose?.();
  }
}
