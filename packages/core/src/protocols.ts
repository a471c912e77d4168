import { fenceProtocol } from './fence-protocol.js';
import { nativeProtocol } from './native-protocol.js';
import type { ToolProtocol } from './tool-protocol.js';
import type { ToolProtocolName } from '@agentq/contract';

export function protocolFor(name: ToolProtocolName): ToolProtocol {
  return name === 'fences' ? fenceProtocol : nativeProtocol;
}
