#!/usr/bin/env node
// `npm start`: builds the lab and serves it on localhost, printing the URL to open in Chrome.
// (http://localhost is a secure context, which WebGPU requires.)
import { build, preview } from "vite";

await build({ configFile: "vite.config.ts", logLevel: "warn" });
const port = Number(process.env.PORT ?? 5173);
const server = await preview({
  configFile: "vite.config.ts",
  preview: { port, strictPort: false, host: "localhost" },
});
const url = server.resolvedUrls?.local[0] ?? `http://localhost:${port}/`;
console.log(
  `\nAgentic RL Lab is running. Open this URL in Chrome (WebGPU on):\n\n  ${url}\n\nPress Ctrl+C to stop.`,
);
