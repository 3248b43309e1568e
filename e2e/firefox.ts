// Finds and launches the system's Firefox (Debian's firefox-esr) with WebGPU on, through
// puppeteer-core over WebDriver BiDi: a second WebGPU implementation (wgpu, its shaders compiled
// by Naga, no `subgroups`) beside Chromium's Dawn. playwright-core's BiDi Firefox needs commands
// that Firefox ESR 153 lacks (emulation.setMediaFeaturesOverride), so this one launcher uses
// puppeteer instead. Used by e2e/firefox.e2e.test.ts.
import { execSync } from "node:child_process";
import { existsSync } from "node:fs";
import puppeteer, { type Browser } from "puppeteer-core";

const CANDIDATES = ["/usr/bin/firefox-esr", "/usr/bin/firefox"];

export const FIREFOX_HINT =
  "sudo apt-get install -y firefox-esr   (or set FIREFOX_PATH to a Firefox with WebGPU; ESR 153 checked)";

/** The Firefox binary, or null when this machine has none. */
export function findFirefox(): string | null {
  const fromEnv = process.env.FIREFOX_PATH;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`FIREFOX_PATH=${fromEnv} does not exist. ${FIREFOX_HINT}`);
    return fromEnv;
  }
  for (const p of CANDIDATES) if (existsSync(p)) return p;
  try {
    return execSync("command -v firefox-esr || command -v firefox", { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
}

/** WebGPU is behind these prefs in Firefox ESR on Linux; the blocklist refuses software adapters. */
export const WEBGPU_PREFS = {
  "dom.webgpu.enabled": true,
  "dom.webgpu.workers.enabled": true,
  "gfx.webgpu.ignore-blocklist": true,
};

/** Launches headless Firefox; `webgpu: false` leaves Firefox's own default (off on Linux ESR). */
export async function launchFirefox(
  executablePath: string,
  opts: { webgpu?: boolean } = {},
): Promise<Browser> {
  return puppeteer.launch({
    browser: "firefox",
    executablePath,
    headless: true,
    extraPrefsFirefox: opts.webgpu === false ? {} : WEBGPU_PREFS,
  });
}
