import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// In development (`npm run dev`), calls go to the gateway that `secondbrain up` runs; in production the UI is
// served by that same gateway, so every call is same-origin.
const gateway = process.env.SECONDBRAIN_GATEWAY_URL ?? "http://127.0.0.1:8080";

export default defineConfig({
  plugins: [react()],
  // No source maps: the gateway serves dist/ to anyone who can reach it, and a map is the source itself.
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false },
  server: {
    proxy: {
      "/secondbrain.": { target: gateway, changeOrigin: true },
      "/api/": { target: gateway, changeOrigin: true },
    },
  },
});
