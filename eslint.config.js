import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';
import explainedSwallow from './eslint-rules/explained-swallow.js';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '.agentq/**', 'tests/.artifacts/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    // A promise nobody awaits loses its error: await it, or `void` it where a comment says why that is right.
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: {
        project: ['./tsconfig.tests.json', './packages/*/tsconfig.json', './apps/*/tsconfig.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  {
    files: ['packages/*/src/**/*.ts', 'apps/*/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    plugins: { agentq: { rules: { 'explained-swallow': explainedSwallow } } },
    rules: { 'agentq/explained-swallow': 'error' },
  },
  {
    files: ['apps/dashboard/**/*.ts'],
    languageOptions: { globals: globals.browser },
    // Text only: whatever a model wrote must never be parsed as HTML.
    rules: {
      'no-restricted-properties': [
        'error',
        { property: 'innerHTML' },
        { property: 'outerHTML' },
        { property: 'insertAdjacentHTML' },
      ],
    },
  },
  {
    // The environment is read in one place: packages/config.
    files: ['packages/**/*.ts', 'apps/**/*.ts'],
    ignores: [
      'packages/config/**',
      '**/*.test.ts',
      'apps/cli/src/private-redis.ts',
      'packages/tools/src/tool-environment.ts',
    ],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read configuration through @agentq/config.' },
      ],
    },
  },
  {
    // Routes parse, call the task service or the store, and map the result: the key layout and the
    // Redis connection are the store's alone (docs/ARCHITECTURE.md).
    files: ['apps/api/src/routes/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'MemberExpression[property.name=/^(redis|keys|publisher)$/]',
          message: 'A route reaches Redis through the task service or the store, never itself.',
        },
      ],
    },
  },
);
