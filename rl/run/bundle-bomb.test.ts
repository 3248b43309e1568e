// A gzip bomb as a bundle file: refused by the inflate cap, named as such, with its peak memory
// measured in a child process (the test process's own heap would hide what one decode costs).
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { zeroBomb } from "./gzip-bomb-fixture";
import { inflateCap } from "./run-bundle";

describe("gzip bomb bundles", () => {
  it("the crafted bomb is a real gzip file (it inflates to exactly its zeros)", async () => {
    const small = zeroBomb(3);
    const out = new Uint8Array(
      await new Response(
        new Blob([small]).stream().pipeThrough(new DecompressionStream("gzip")),
      ).arrayBuffer(),
    );
    expect(out.length).toBe(3 << 20);
    expect(out.every((b) => b === 0)).toBe(true);
  });

  it("the cap: 64x the file, at least 64 MiB, at most 1 GiB", () => {
    expect(inflateCap(1000)).toBe(64 << 20);
    expect(inflateCap(4 << 20)).toBe(256 << 20);
    expect(inflateCap(100 << 20)).toBe(1 << 30);
  });

  it("a 1 MiB bomb is stopped at the cap, whatever its trailer claims; peak memory stays near the cap", () => {
    // Child process: make a 1100 MiB bomb whose trailer claims 100 bytes, decode it, report maxRSS.
    const script = `
      import { decodeBundle } from "./rl/run/run-bundle.ts";
      import { zeroBomb } from "./rl/run/gzip-bomb-fixture.ts";
      const bomb = zeroBomb(1100, 100);
      const before = process.memoryUsage().rss;
      const r = await decodeBundle(bomb);
      console.log(JSON.stringify({ r, bytes: bomb.length, before, maxRSS: process.resourceUsage().maxRSS * 1024 }));
    `;
    const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 240_000,
    });
    expect(child.stderr).toBe("");
    const got = JSON.parse(child.stdout.trim().split("\n").pop() as string);
    expect(got.r).toEqual({
      ok: false,
      error: expect.stringMatching(/^the gzip file inflates past [\d.]+ MiB: .*gzip bomb/),
    });
    expect(got.r.error).toContain(`past ${(inflateCap(got.bytes) / 2 ** 20).toFixed(1)} MiB`);
    // Before the cap this bomb took 1.15 GiB of RSS; now the decode holds at most the 68 MiB cap
    // (its chunks) above the process's start.
    console.log(
      `bomb ${(got.bytes / 2 ** 20).toFixed(2)} MiB: peak RSS ${(got.maxRSS / 2 ** 20).toFixed(0)} MiB, ${(got.before / 2 ** 20).toFixed(0)} MiB before decoding`,
    );
    expect(got.maxRSS - got.before).toBeLessThan(200 * 2 ** 20);
  });
});
