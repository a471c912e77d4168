import { chooseIsolation } from '../packages/tools/dist/process-isolation.js';
import { bashTool } from '../packages/tools/dist/bash-tool.js';
import { mkdtemp } from 'node:fs/promises';
const root = await mkdtemp('/tmp/fdtest-');
const isolation = await chooseIsolation({ mode: 'bwrap', workRoot: root, jail: { network: 'none', limits: { processes: 64, memoryMb: 512, fileMb: 64, cpuSeconds: 20 } } });
const workdir = root + '/w'; await isolation.jail.prepareWorkdir(workdir);
console.log(JSON.stringify(await bashTool.run({ command: 'ls -l /proc/$$/fd' }, { workdir, signal: new AbortController().signal, timeoutMs: 10000, outputLimit: 8000, isolation })));
