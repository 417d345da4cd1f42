import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import react from "@vitejs/plugin-react";
import { defineConfig, type Plugin } from "vite";

// In development (`npm run dev`), calls go to the gateway that `secondbrain up` runs; in production the UI is
// served by that same gateway, so every call is same-origin.
const gateway = process.env.SECONDBRAIN_GATEWAY_URL ?? "http://127.0.0.1:8080";

const OUT_DIR = "dist";
const SERVICE_WORKER = "sw.js";

function filesUnder(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(directory, entry.name)) : [join(directory, entry.name)],
  );
}

// The service worker (public/sw.js) precaches the app shell: once the build has written everything (the hashed
// scripts and styles, index.html, the public files), this writes their paths into the copied sw.js, and a hash of
// their contents as its version, so each build's worker caches exactly that build and replaces the one before.
function shellManifest(): Plugin {
  let outDir = OUT_DIR;
  return {
    name: "shell-manifest",
    apply: "build",
    configResolved(config) {
      outDir = config.build.outDir;
    },
    closeBundle() {
      const worker = join(outDir, SERVICE_WORKER);
      const files = filesUnder(outDir)
        .map((path) => relative(outDir, path).split(sep).join("/"))
        .filter((path) => path !== SERVICE_WORKER && !path.endsWith(".map"))
        .sort();
      const hash = createHash("sha256");
      for (const path of files) hash.update(path).update("\0").update(readFileSync(join(outDir, path)));
      const shell = files.map((path) => `/${path}`);
      const source = readFileSync(worker, "utf8");
      const filled = source
        .replace('["__SECONDBRAIN_SHELL_FILES__"]', JSON.stringify(shell))
        .replace("__SECONDBRAIN_SHELL_VERSION__", hash.digest("hex").slice(0, 16));
      if (filled === source || filled.includes("__SECONDBRAIN_SHELL_")) {
        throw new Error(`shell-manifest: ${worker} has lost its placeholders`);
      }
      writeFileSync(worker, filled);
    },
  };
}

export default defineConfig({
  plugins: [react(), shellManifest()],
  // No source maps: the gateway serves dist/ to anyone who can reach it, and a map is the source itself.
  build: { outDir: OUT_DIR, emptyOutDir: true, sourcemap: false },
  server: {
    proxy: {
      "/secondbrain.": { target: gateway, changeOrigin: true },
      "/api/": { target: gateway, changeOrigin: true },
    },
  },
});
