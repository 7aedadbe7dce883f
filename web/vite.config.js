import { defineConfig } from 'vite';

// The page is served by `ducktail serve` at /ui/ from files embedded in the binary
// (api/ui.go), and by any static server elsewhere: relative asset URLs work under both.
export default defineConfig({
  base: './',
  // @ducktail/client is linked from ../clients/js, which has its own node_modules: one
  // copy of apache-arrow serves both, so that the package's tables are the page's.
  resolve: { dedupe: ['apache-arrow'] },
  build: {
    outDir: '../api/ui/dist',
    emptyOutDir: true,
    target: 'es2022',
    // apache-arrow is most of the bundle; one chunk keeps the embedded file set small.
    chunkSizeWarningLimit: 1024,
  },
});
