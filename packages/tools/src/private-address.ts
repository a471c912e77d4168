/**
 * Whether a host resolves to an address inside this machine or its private network (loopback,
 * RFC 1918, link-local, carrier-grade NAT, IPv6 unique-local). `http_fetch` refuses those unless the
 * operator allows them: a page a model reads may try to steer it at the API, a metadata service, or a
 * database's HTTP port.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const privateRanges = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const) {
  privateRanges.addSubnet(network, prefix, 'ipv4');
}
privateRanges.addAddress('::1', 'ipv6');
privateRanges.addAddress('::', 'ipv6');
privateRanges.addSubnet('fc00::', 7, 'ipv6');
privateRanges.addSubnet('fe80::', 10, 'ipv6');

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
