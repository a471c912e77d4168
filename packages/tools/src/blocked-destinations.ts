/**
 * Where a model's network access never goes: this machine (loopback and every address it has), its
 * private network (RFC 1918, link-local, carrier-grade NAT, IPv6 unique-local), ranges that are never
 * the internet (multicast, broadcast, reserved), and the services agentq itself uses (Redis, when its
 * address is public). The egress jail's firewall (jail-egress.ts) and `http_fetch` refuse the same
 * list: a page a model reads may try to steer it at the API, a metadata service, or a database.
 */
import { AgentqError } from '@agentq/contract';
import dns from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

/** Loopback, RFC 1918, link-local, carrier-grade NAT, "this network", IPv6 loopback and unique-local. */
const PRIVATE_RANGES = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '::1/128',
  '::/128',
  'fc00::/7',
  'fe80::/10',
];

/** Ranges that are never the internet, beyond the private ones: multicast, broadcast, reserved. */
const RESERVED_RANGES = ['192.0.0.0/24', '198.18.0.0/15', '224.0.0.0/4', '240.0.0.0/4', 'ff00::/8'];

/**
 * The IPv6 forms of an IPv4 range that reach it through a NAT64 gateway (`64:ff9b::/96`, RFC 6052):
 * on an IPv6-only network `64:ff9b::a9fe:a9fe` is the gateway's 169.254.169.254.
 */
function nat64Of(range: string): string | undefined {
  const [network, prefix] = range.split('/') as [string, string];
  if (isIP(network) !== 4) return undefined;
  const [a, b, c, d] = network.split('.').map(Number) as [number, number, number, number];
  const hex = (high: number, low: number) => ((high << 8) | low).toString(16);
  return `64:ff9b::${hex(a, b)}:${hex(c, d)}/${96 + Number(prefix)}`;
}

/** This machine's own addresses, now (an interface's scope suffix cut off). */
function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .map((entry) => entry?.address.split('%')[0])
    .filter((address): address is string => Boolean(address));
}

/** Every refused destination as a prefix (`10.0.0.0/8`, a lone address as itself), `deny` added. */
export function blockedPrefixes(deny: readonly string[] = []): string[] {
  const ranges = [...PRIVATE_RANGES, ...RESERVED_RANGES];
  const nat64 = ranges.map(nat64Of).filter((range): range is string => range !== undefined);
  return [...new Set([...ranges, ...nat64, ...hostAddresses(), ...deny])];
}

/** Whether an address is refused; an IPv4 address in IPv6 form (`::ffff:7f00:1`) is its IPv4 one. */
export type DestinationCheck = (address: string) => boolean;

export function blockedDestinations(deny: readonly string[] = []): DestinationCheck {
  const list = new BlockList();
  for (const prefix of blockedPrefixes(deny)) {
    const [network, bits] = prefix.split('/') as [string, string | undefined];
    const family = isIP(network) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(network, family);
    else list.addSubnet(network, Number(bits), family);
  }
  return (address) => {
    const family = isIP(address);
    return family !== 0 && list.check(address, family === 6 ? 'ipv6' : 'ipv4');
  };
}

/** A connection refused because its host resolved to a refused address. */
export class BlockedDestinationError extends AgentqError {
  readonly code = 'blocked_destination';
  readonly retryable = false;
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`${host} resolves to ${address}, which is not on the public internet`);
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `net.connect`: the name is resolved once, every address it has is checked, and the
 * connection goes to one of the addresses checked. A check before connecting would resolve the name a
 * second time, and a name can answer differently each time (DNS rebinding).
 */
export function checkedLookup(blocked: DestinationCheck) {
  return (host: string, options: LookupOptions, callback: LookupCallback): void => {
    dns.lookup(host, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const refused = addresses.find(({ address }) => blocked(address));
      if (refused) return callback(new BlockedDestinationError(host, refused.address), []);
      if (options.all) return callback(null, addresses);
      const [first] = addresses;
      if (!first) return callback(Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}

/** The refusal in an error's chain of causes (a fetch wraps what its connect threw), if any. */
export function blockedCause(error: unknown): BlockedDestinationError | undefined {
  for (let at = error, depth = 0; at && depth < 8; at = (at as { cause?: unknown }).cause, depth++)
    if (at instanceof BlockedDestinationError) return at;
  return undefined;
}
