// e2e: the page's "Export to verl" downloads a zip of the export (export/index.ts, zipped by
// export/zip.ts) for the config in the form, and lists what does not carry over. No WebGPU
// needed: the exporter is pure and runs in the page.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launchChromium } from "./chromium";

const baseUrl = inject("baseUrl");
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium({ webgpu: false });
});
afterAll(async () => {
  await browser?.close();
});

describe("export from the page", () => {
  it("downloads the verl export as a zip and lists the warnings", async () => {
    const context = await browser.newContext({ acceptDownloads: true });
    const page = await context.newPage();
    await page.goto(baseUrl);
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByTestId("export-verl").click(),
    ]);
    // named after what the page shows: no run yet, so the preset in the form
    expect(download.suggestedFilename()).toBe("quick-demo-verl.zip");
    const file = join(mkdtempSync(join(tmpdir(), "export-e2e-")), "export.zip");
    await download.saveAs(file);
    const names = JSON.parse(
      execFileSync(
        "python3",
        [
          "-c",
          "import zipfile,sys,json; z=zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; print(json.dumps(z.namelist()))",
          file,
        ],
        {
          encoding: "utf8",
        },
      ),
    );
    expect(names).toEqual([
      "README.md",
      "config.yaml",
      "lab_node.py",
      "lab_tools.py",
      "reward.py",
      "run.sh",
      "tool_config.yaml",
      "tool_config_node.yaml",
      "train.parquet",
      "val.parquet",
    ]);
    const warnings = page.getByTestId("export-warnings");
    await warnings.waitFor();
    await expect.poll(() => warnings.textContent()).toContain("part(s) do not carry over");
    await context.close();
  });
});
