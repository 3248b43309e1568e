// Builds the app once and serves dist/ on localhost (WebGPU needs a secure context, and
// http://localhost is one) for every e2e spec. The URL reaches the specs through `inject("baseUrl")`.

import { build, preview } from "vite";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    baseUrl: string;
  }
}

export default async function setup(project: TestProject) {
  if (!process.env.E2E_SKIP_BUILD) await build({ configFile: "vite.config.ts", logLevel: "warn" });
  const server = await preview({
    configFile: "vite.config.ts",
    preview: { port: 4319, strictPort: false, open: false },
  });
  const url = server.resolvedUrls?.local[0];
  if (!url) throw new Error("vite preview did not report a local URL");
  project.provide("baseUrl", url.replace("127.0.0.1", "localhost"));
  return async () => {
    await server.close();
  };
}
