/**
 * A slow link, as a host of its own: a TCP proxy that forwards to `--to host:port` and holds every chunk
 * `--delay` ms in each direction (the kernel here has no netem). Chunks keep their order: each direction
 * is a queue released in order. Sends `{ ready: address }` over IPC once it listens on `--host`.
 */
import net from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    host: { type: 'string' },
    port: { type: 'string', default: '6379' },
    to: { type: 'string' },
    delay: { type: 'string', default: '0' },
  },
});
const delayMs = Number(values.delay);
const [toHost, toPort] = values.to.split(':');

/** Writes what arrives on `from` to `to`, each chunk `delayMs` after it arrived, in order. */
function delayed(from, to) {
  from.on('data', (chunk) => {
    if (delayMs === 0) return void to.write(chunk);
    setTimeout(() => to.writable && to.write(chunk), delayMs);
  });
  from.on('end', () => setTimeout(() => to.end(), delayMs));
  from.on('error', () => to.destroy());
}

const server = net.createServer((client) => {
  client.setNoDelay(true);
  const upstream = net.connect({ host: toHost, port: Number(toPort) });
  upstream.setNoDelay(true);
  delayed(client, upstream);
  delayed(upstream, client);
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
});
server.listen(Number(values.port), values.host, () => process.send({ ready: `${values.host}:${values.port}` }));
process.on('disconnect', () => process.exit(0));
