import { RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, it } from 'vitest';
// @ts-expect-error: the rule is plain JavaScript, loaded by eslint.config.js.
import explainedSwallow from '../../eslint-rules/explained-swallow.js';

// RuleTester runs each case as a test of its own.
RuleTester.describe = describe;
RuleTester.it = it;
RuleTester.itOnly = it.only;
const tester = new RuleTester({ languageOptions: { parser: tseslint.parser } });

tester.run('explained-swallow', explainedSwallow, {
  valid: [
    { code: '// A probe only: nothing to say when it fails.\nprobe().catch(() => undefined);' },
    { code: 'const read = await open(name).catch(() => undefined); // a name gone since the listing' },
    { code: "// Said once by the watcher.\nredis.on('error', () => undefined);" },
    { code: 'job().catch((error) => log(error));' },
    { code: "redis.on('error', (error) => log(error));" },
    { code: '// Cut: nobody reads it.\nawait stream\n  .cancel()\n  .catch(() => {});' },
  ],
  invalid: [
    { code: 'probe().catch(() => undefined);', errors: [{ messageId: 'unexplained' }] },
    { code: 'probe().catch(() => {});', errors: [{ messageId: 'unexplained' }] },
    { code: 'probe().then(use, () => null);', errors: [{ messageId: 'unexplained' }] },
    { code: "redis.on('error', () => undefined);", errors: [{ messageId: 'unexplained' }] },
    { code: "child.stdin.once('error', function () {});", errors: [{ messageId: 'unexplained' }] },
    // A comment two statements away explains nothing here.
    { code: '// about a\na();\nb();\nprobe().catch(() => undefined);', errors: [{ messageId: 'unexplained' }] },
  ],
});
