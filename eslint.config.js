// Lint: typescript-eslint's type-checked recommendations, plus the one-way import rules of
// ARCHITECTURE.md ("Source layout") for the layers that must stay pure.
import eslint from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const ioModules = ['fs', 'net', 'http', 'https', 'dgram', 'child_process', 'tls', 'worker_threads']
  .flatMap((name) => [name, `node:${name}`, `${name}/promises`, `node:${name}/promises`]);

export default tseslint.config(
  { ignores: ['node_modules/', 'coverage/', '.services/'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Interfaces such as BullMQ processors ask for a Promise even when the body needs no await.
      '@typescript-eslint/require-await': 'off',
      eqeqeq: ['error', 'always'],
    },
  },
  {
    files: ['src/protocol/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: ioModules.map((name) => ({ name, message: 'the protocol layer is pure: no I/O' })),
        patterns: [{ regex: '^\\.\\./(?!common/)', message: 'protocol depends only on common' }],
      }],
    },
  },
  {
    files: ['src/protocol/apis/**/*.ts', 'src/protocol/sasl/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: ioModules.map((name) => ({ name, message: 'the protocol layer is pure: no I/O' })),
        patterns: [{ regex: '^\\.\\./\\.\\./(?!common/)', message: 'protocol depends only on common' }],
      }],
    },
  },
  {
    files: ['src/storage/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: ['net', 'node:net', 'http', 'node:http', 'tls', 'node:tls'].map((name) => ({ name, message: 'storage knows no network' })),
        patterns: [{ regex: '^\\.\\./(?!common/|protocol/)', message: 'storage depends on protocol and common only' }],
      }],
    },
  },
  {
    // Storage's own folders (cleaner/) reach the rest of storage with ../ and src with ../../.
    files: ['src/storage/*/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: ['net', 'node:net', 'http', 'node:http', 'tls', 'node:tls'].map((name) => ({ name, message: 'storage knows no network' })),
        patterns: [{ regex: '^\\.\\./\\.\\./(?!common/|protocol/)', message: 'storage depends on protocol and common only' }],
      }],
    },
  },
  {
    files: ['src/common/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^\\.\\./', message: 'common depends on nothing else in src' }] }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: globals.node },
  },
);
