/**
 * A stand-in for the internet: a network namespace of the test's own, reached from this host by a
 * veth pair, with a server at `<subnet>.2` that answers every connection with a short HTTP response
 * (`from the internet`; to `GET /to/<url>`, a redirect to `<url>`), and this host at `<subnet>.1`. Needs root (`ip netns`); removed afterwards.
 * Each test file that uses it at the same time takes its own documentation subnet (198.51.100,
 * 203.0.113): two veths with one subnet would make the route ambiguous.
 */
import { execFileSync, spawn } from 'node:child_process';

export async function withPublicServer(
  subnet: string,
  run: (address: string, port: number) => Promise<void>,
): Promise<void> {
  const name = `agentq-pub-${process.pid}`;
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });
  const hostSide = `aq${process.pid % 100000}h`;
  const address = `${subnet}.2`;
  ip('netns', 'add', name);
  try {
    ip('link', 'add', hostSide, 'type', 'veth', 'peer', 'name', 'pub0', 'netns', name);
    ip('addr', 'add', `${subnet}.1/24`, 'dev', hostSide);
    ip('link', 'set', hostSide, 'up');
    ip('-n', name, 'addr', 'add', `${address}/24`, 'dev', 'pub0');
    ip('-n', name, 'link', 'set', 'pub0', 'up');
    ip('-n', name, 'link', 'set', 'lo', 'up');
    // The server runs inside that namespace. It reads what a client sends, if anything comes within
    // 0.3 s (a raw probe sends nothing), so that an HTTP client's request is not cut off unread.
    const port = 18080;
    const server = spawn(
      'ip',
      [
        'netns',
        'exec',
        name,
        '/usr/bin/python3',
        '-c',
        `
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("${address}", ${port})); s.listen()
print("listening", flush=True)
while True:
    c, _ = s.accept(); c.settimeout(0.3)
    try: request = c.recv(65536).decode("latin-1")
    except OSError: request = ""
    path = request.split(" ")[1] if request.count(" ") >= 2 else "/"
    if path.startswith("/to/"): c.sendall(("HTTP/1.0 302 Found\\r\\nlocation: " + path[4:] + "\\r\\n\\r\\n").encode())
    else: c.sendall(b"HTTP/1.0 200 OK\\r\\ncontent-type: text/plain\\r\\n\\r\\nfrom the internet\\n")
    c.close()
`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve) => server.stdout.once('data', () => resolve()));
    try {
      await run(address, port);
    } finally {
      server.kill('SIGKILL');
    }
  } finally {
    try {
      ip('link', 'del', hostSide);
    } catch {
      // Gone with the namespace.
    }
    ip('netns', 'del', name);
  }
}
