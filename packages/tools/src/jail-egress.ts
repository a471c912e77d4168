/**
 * The `egress` network of a jail: internet access, but never this host, its private network, or the
 * services agentq itself uses. The jail gets its own network namespace as usual; before its command
 * runs, a firewall (nftables, inside that namespace, where the jailed process has no capability to
 * change it) rejects loopback, private and link-local ranges and every address of this host, and then
 * slirp4netns gives the namespace a user-mode NAT to the outside with the host's loopback unmapped.
 * slirp4netns opens the real connections from the host, so the firewall must sit in the jail, before
 * the packets ever reach it.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { blockedPrefixes } from './blocked-destinations.js';

/** slirp4netns's fixed layout: the DNS forwarder the jail's resolv.conf names. */
const SLIRP_DNS = '10.0.2.3';

export interface EgressTools {
  slirp4netns: string;
  nsenter: string;
  nft: string;
}

/** The programs the egress network needs, or the names of those missing. */
export function findEgressTools(): EgressTools | { missing: string[] } {
  const find = (name: string) =>
    ['/usr/bin', '/usr/sbin', '/bin', '/sbin'].map((folder) => `${folder}/${name}`).find((file) => existsSync(file));
  const found = { slirp4netns: find('slirp4netns'), nsenter: find('nsenter'), nft: find('nft') };
  const missing = Object.entries(found)
    .filter(([, file]) => !file)
    .map(([name]) => name);
  return missing.length ? { missing } : (found as EgressTools);
}

/** The firewall of a jail's namespace, in nft syntax: everything not listed goes out. */
export function egressRules(options: { deny?: readonly string[] } = {}): string {
  // One rule per prefix: nft refuses overlapping intervals inside one set.
  const rules = blockedPrefixes(options.deny).map(
    (prefix) => `    ${isIP(prefix.split('/')[0]!) === 6 ? 'ip6' : 'ip'} daddr ${prefix} reject`,
  );
  return [
    'table inet agentq {',
    '  chain output {',
    '    type filter hook output priority filter; policy accept;',
    '    oifname "lo" accept',
    `    ip daddr ${SLIRP_DNS} udp dport 53 accept`,
    `    ip daddr ${SLIRP_DNS} tcp dport 53 accept`,
    ...rules,
    '  }',
    '}',
    '',
  ].join('\n');
}

/**
 * Gives the network namespace of a jailed process (still waiting to run its command) its firewall,
 * then its way out. Returns what ends the NAT; it also ends by itself if this process dies.
 */
export async function attachEgress(options: { pid: number; tools: EgressTools; rules: string }): Promise<() => void> {
  const { pid, tools } = options;
  const netns = `/proc/${pid}/ns/net`;
  await new Promise<void>((resolve, reject) => {
    const child = execFile(
      tools.nsenter,
      [`--net=${netns}`, tools.nft, '-f', '-'],
      { timeout: 10_000 },
      (error, _stdout, stderr) =>
        error
          ? reject(new Error(`the jail's firewall could not be set: ${stderr.trim() || error.message}`))
          : resolve(),
    );
    // nsenter may fail before it reads the rules: its error, not a broken pipe, is the news.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(options.rules);
  });
  const slirp = spawn(
    tools.slirp4netns,
    [
      '--configure',
      '--mtu=65520',
      '--disable-host-loopback',
      // Its own mount namespace with nothing but what it needs, its capabilities dropped, and its own
      // seccomp filter: it parses every packet the jail sends, as root.
      '--enable-sandbox',
      '--enable-seccomp',
      '--ready-fd=3',
      '--exit-fd=4',
      '--netns-type=path',
      netns,
      'tap0',
    ],
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  slirp.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  await new Promise<void>((resolve, reject) => {
    const ready = slirp.stdio[3]!;
    ready.once('data', () => resolve());
    slirp.once('error', (error) => reject(new Error(`slirp4netns could not start: ${error.message}`)));
    slirp.once('exit', (code) => reject(new Error(`slirp4netns exited (${code}): ${stderr.trim()}`)));
  });
  return () => {
    // Closing its exit pipe ends it; the kill is for good measure.
    slirp.stdio[4]?.destroy();
    slirp.kill('SIGKILL');
  };
}
