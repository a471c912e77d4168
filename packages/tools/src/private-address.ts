/**
 * Whether a host resolves to an address inside this machine or its private network (loopback,
 * RFC 1918, link-local, carrier-grade NAT, IPv6 unique-local). `http_fetch` refuses those unless the
 * operator allows them: a page a model reads may try to steer it at the API, a metadata service, or a
 * database's HTTP port.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** Loopback, RFC 1918, link-local, carrier-grade NAT, "this network", IPv6 loopback and unique-local. */
export const PRIVATE_RANGES: ReadonlyArray<{ network: string; prefix: number; family: 'ipv4' | 'ipv6' }> = [
  { network: '0.0.0.0', prefix: 8, family: 'ipv4' },
  { network: '10.0.0.0', prefix: 8, family: 'ipv4' },
  { network: '100.64.0.0', prefix: 10, family: 'ipv4' },
  { network: '127.0.0.0', prefix: 8, family: 'ipv4' },
  { network: '169.254.0.0', prefix: 16, family: 'ipv4' },
  { network: '172.16.0.0', prefix: 12, family: 'ipv4' },
  { network: '192.168.0.0', prefix: 16, family: 'ipv4' },
  { network: '::1', prefix: 128, family: 'ipv6' },
  { network: '::', prefix: 128, family: 'ipv6' },
  { network: 'fc00::', prefix: 7, family: 'ipv6' },
  { network: 'fe80::', prefix: 10, family: 'ipv6' },
];

const privateRanges = new BlockList();
for (const range of PRIVATE_RANGES) privateRanges.addSubnet(range.network, range.prefix, range.family);

export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return privateRanges.check(address, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    return mapped ? privateRanges.check(mapped[1]!, 'ipv4') : privateRanges.check(address, 'ipv6');
  }
  return false;
}

/** The first private address the host resolves to, if any. */
export async function privateAddressOf(hostname: string): Promise<string | undefined> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((entry) => entry.address);
  return addresses.find(isPrivateAddress);
}
