// Finds and launches the system's Chromium through playwright-core (test tools may not
// download browsers here). Used by the e2e tests and the in-browser benchmarks.

import { execSync } from "node:child_process";
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

const CANDIDATES = [
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome",
  "/usr/bin/google-chrome-stable",
];

export const INSTALL_HINT =
  "sudo apt-get install -y chromium   (or set CHROME_PATH to a Chrome/Chromium binary)";

export function findChromium(): string {
  const fromEnv = process.env.CHROME_PATH;
  if (fromEnv) {
    if (!existsSync(fromEnv))
      throw new Error(`CHROME_PATH=${fromEnv} does not exist. Install Chromium: ${INSTALL_HINT}`);
    return fromEnv;
  }
  for (const p of CANDIDATES) if (existsSync(p)) return p;
  for (const name of ["chromium", "chromium-browser", "google-chrome"]) {
    try {
      const p = execSync(`command -v ${name}`, { encoding: "utf8" }).trim();
      if (p) return p;
    } catch {}
  }
  throw new Error(
    `No Chromium found (tried CHROME_PATH, ${CANDIDATES.join(", ")}). Install it: ${INSTALL_HINT}`,
  );
}

const BASE_FLAGS = [
  "--no-sandbox",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

export const WEBGPU_FLAGS = [
  "--enable-unsafe-webgpu",
  "--enable-unsafe-swiftshader",
  "--use-webgpu-adapter=swiftshader",
];

/** Launches headless Chromium; `webgpu: false` leaves WebGPU off (requestAdapter returns null). */
export async function launchChromium(opts: { webgpu?: boolean } = {}): Promise<Browser> {
  const args = [...BASE_FLAGS, ...(opts.webgpu === false ? [] : WEBGPU_FLAGS)];
  return chromium.launch({ executablePath: findChromium(), headless: true, args });
}
