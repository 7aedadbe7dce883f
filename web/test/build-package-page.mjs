// Builds web/test/package-page with Vite into the directory named by the first argument,
// for cmd/ducktail TestBrowserClientPackage. @ducktail/client comes from its TypeScript
// source (clients/js/src), so that no dist/ needs to be built first; one apache-arrow
// serves both the page and the package.
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const outDir = process.argv[2];
if (!outDir) throw new Error('usage: node build-package-page.mjs OUTDIR');
await build({
  root: fileURLToPath(new URL('./package-page/', import.meta.url)),
  base: './',
  logLevel: 'warn',
  configFile: false,
  resolve: {
    alias: { '@ducktail/client': fileURLToPath(new URL('../../clients/js/src/index.ts', import.meta.url)) },
    dedupe: ['apache-arrow'],
  },
  build: { outDir, emptyOutDir: true, target: 'es2022', chunkSizeWarningLimit: 1024 },
});
