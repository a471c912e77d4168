/**
 * A test network inside this machine, made by the test itself: each "host" is a network namespace of
 * its own, joined by a veth pair to a bridge that lives in a namespace of its own. Addresses exist only
 * inside (10.77.<net>.0/24); nothing links to the machine's own interfaces and no namespace has a
 * default route, so no packet can leave the test network. It needs root (`ip netns`): `unavailable()`
 * says why it cannot be made. Everything it made is removed by `remove()`, which also runs when the
 * process exits or is interrupted.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';

export interface Host {
  name: string;
  /** Its network namespace. */
  ns: string;
  address: string;
  /** Its link's end on the bridge. */
  port: string;
}

/** Why namespaces cannot be made here (not root, no `ip`), or undefined when they can. */
export function unavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'the test network needs root (ip netns)';
  try {
    const probe = `aqprobe${process.pid}`;
    execFileSync('ip', ['netns', 'add', probe], { stdio: 'pipe' });
    execFileSync('ip', ['netns', 'del', probe], { stdio: 'pipe' });
    return undefined;
  } catch (error) {
    return `network namespaces cannot be made here: ${(error as Error).message.split('\n')[0]}`;
  }
}

/** Every network made by this process and not yet removed: removed at exit, whatever happens. */
const live = new Set<TestNetwork>();
let hooked = false;
function removeAllAtExit(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const network of live) network.removeNow();
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const network of live) network.removeNow();
      process.exit(130);
    });
  }
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: 'pipe' });
}

export class TestNetwork {
  readonly hosts = new Map<string, Host>();
  private readonly processes = new Set<ChildProcess>();
  private readonly outputs = new WeakMap<ChildProcess, () => string>();
  private readonly bridge: string;
  private removed = false;

  /** `net`: the third byte of the addresses, so that runs side by side do not share a network. */
  private constructor(
    private readonly id: string,
    private readonly net: number,
  ) {
    this.bridge = `${id}-bridge`;
  }

  static create(): TestNetwork {
    removeAllAtExit();
    const id = `aq${process.pid}`;
    const network = new TestNetwork(id, 20 + (process.pid % 200));
    live.add(network);
    ip('netns', 'add', network.bridge);
    ip('-n', network.bridge, 'link', 'add', 'br0', 'type', 'bridge');
    ip('-n', network.bridge, 'link', 'set', 'br0', 'up');
    return network;
  }

  /** A new host on the bridge, with the next address. */
  addHost(name: string): Host {
    const index = this.hosts.size + 2;
    // Made in this namespace under names of this run, then moved: the host's end is its eth0.
    const inside = `${this.id}h${index}`.slice(-15);
    const outside = `${this.id}b${index}`.slice(-15);
    const host: Host = { name, ns: `${this.id}-${name}`, address: `10.77.${this.net}.${index}`, port: outside };
    ip('netns', 'add', host.ns);
    ip('link', 'add', inside, 'type', 'veth', 'peer', 'name', outside);
    ip('link', 'set', inside, 'netns', host.ns);
    ip('link', 'set', outside, 'netns', this.bridge);
    ip('-n', host.ns, 'link', 'set', inside, 'name', 'eth0');
    ip('-n', host.ns, 'addr', 'add', `${host.address}/24`, 'dev', 'eth0');
    ip('-n', host.ns, 'link', 'set', 'eth0', 'up');
    ip('-n', host.ns, 'link', 'set', 'lo', 'up');
    ip('-n', this.bridge, 'link', 'set', outside, 'master', 'br0');
    ip('-n', this.bridge, 'link', 'set', outside, 'up');
    this.hosts.set(name, host);
    return host;
  }

  host(name: string): Host {
    const host = this.hosts.get(name);
    if (!host) throw new Error(`No host ${name} in the test network`);
    return host;
  }

  /**
   * Cuts a host's link at the bridge, as a pulled cable or a dead switch port: the host still thinks
   * it is connected, and what it sends is lost without a word (its connections hang, nothing fails at once).
   */
  cut(name: string): void {
    ip('-n', this.bridge, 'link', 'set', this.host(name).port, 'down');
  }

  mend(name: string): void {
    ip('-n', this.bridge, 'link', 'set', this.host(name).port, 'up');
  }

  /** Runs a program on a host, with an IPC channel (`ip netns exec` passes it on to a Node program). */
  spawn(name: string, command: string, args: string[], env: Record<string, string>): ChildProcess {
    const child = spawn('ip', ['netns', 'exec', this.host(name).ns, command, ...args], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    // Its output is read as it comes (a full pipe would stop it), and its last 256 KiB kept.
    let output = '';
    const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-262_144));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    this.outputs.set(child, () => output);
    this.processes.add(child);
    child.once('exit', () => this.processes.delete(child));
    return child;
  }

  /** What a process it started wrote (stdout and stderr, the last 256 KiB). */
  outputOf(child: ChildProcess): string {
    return this.outputs.get(child)?.() ?? '';
  }

  /** Stops every process it started, then removes every namespace (and with them their links). */
  async remove(): Promise<void> {
    await Promise.all(
      [...this.processes].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
            child.once('exit', () => {
              clearTimeout(killer);
              resolve();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
    this.removeNow();
  }

  /** What `remove` does, at once and synchronously (at exit). */
  removeNow(): void {
    if (this.removed) return;
    this.removed = true;
    live.delete(this);
    for (const child of this.processes) child.kill('SIGKILL');
    for (const host of this.hosts.values()) {
      try {
        ip('netns', 'del', host.ns);
      } catch {
        // Gone already.
      }
    }
    try {
      ip('netns', 'del', this.bridge);
    } catch {
      // Gone already.
    }
  }
}
