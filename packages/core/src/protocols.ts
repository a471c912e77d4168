import type { ToolProtocolName } from '@agentq/contract';
import { fenceProtocol } from './fence-protocol.js';
import { nativeProtocol } from './native-protocol.js';
import type { ToolProtocol } from './tool-protocol.js';

/** Each tool protocol by its name: a name added to TOOL_PROTOCOLS is a compile error here until it has one. */
const PROTOCOLS = { native: nativeProtocol, fences: fenceProtocol } satisfies Record<ToolProtocolName, ToolProtocol>;

export function protocolFor(name: ToolProtocolName): ToolProtocol {
  return PROTOCOLS[name];
}
