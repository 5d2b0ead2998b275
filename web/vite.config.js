// Vite builds the explorer into web/dist, which `hloscope serve` serves
// (--web DIR). During development `npm run dev` proxies the API to a server
// on 127.0.0.1:8080 (scripts/run.sh).
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 1500 },
  server: {
    proxy: {
      '/v1': 'http://127.0.0.1:8080',
      '/healthz': 'http://127.0.0.1:8080',
    },
  },
});
