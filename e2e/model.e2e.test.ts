// e2e: pretrained models in the page, one browser context for every check (the model cache is
// the context's Cache Storage). A tiny Qwen3 with a cut-down real Qwen3 tokenizer (e2e/tiny-hf.ts):
//   1. a link naming local files that are not in this browser says so; the same model picked
//      as local files through the picker, the run started: two RL steps, then "try the model";
//   2. a fake Hub (e2e/fake-hub.ts behind context.route: the endpoints and headers the official
//      client @huggingface/hub reads) serves the model by repo id: a link naming it offers the download (size first); the first download is cut
//      off mid-way and the second resumes, fetching only what is missing;
//   3. a second open of that link loads the model and runs with zero requests to the Hub;
//   4. the model picked on the default preset (quick-demo, which starts from the lab's own
//      checkpoint): the reason and the offer of the pretrained recipes at once, Start refused;
//      the offer applied (lab-llama-calculator, the picked model kept, its architecture fields
//      read-only from config.json), two RL steps, the PEFT and HF downloads unzipped and checked.
//   5. the same model with a hostile chat template (a 100,000,000-item range loop) picked as local
//      files: the picker says it is refused (file and budget), nothing of it is cached or becomes
//      the run's model, and the page stays usable (the good files picked next are accepted).
// Run: `npx vitest run --project e2e e2e/model.e2e.test.ts`.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { formatBytes } from "../model/memory-plan";
import { launchChromium } from "./chromium";
import { fakeHub } from "./fake-hub";
import { tinyHfModel } from "./tiny-hf";

const baseUrl = inject("baseUrl");
const REPO = "acme/tiny-qwen3";
const COMMIT = "fedcba9876543210fedcba9876543210fedcba98";
// A run small enough for a software GPU: no SFT, one prompt x 2 samples, two RL steps.
const RUN = [
  "preset=ci-tiny",
  "sft.init_checkpoint=null",
  "sft.steps=0",
  "rl.prompts_per_step=1",
  "rl.group_size=2",
  "rl.minibatches=1",
  "rl.epochs=1",
  "rl.kl.coef=0",
  "task.template=model",
  "task.tokenization_check=warn",
  "task.eval_size=1",
  "task.eval_every=0",
  "model.context=512",
  "sampling.max_new_tokens=8",
  "stop.max_steps=2",
].join("&");

// A zip's files: JSON files parsed, safetensors as their headers, the rest as their size.
const UNZIP = `
import json, struct, sys, zipfile
z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None
out = {}
for n in z.namelist():
    b = z.read(n)
    if n.endswith(".json"): out[n] = json.loads(b)
    elif n.endswith(".safetensors"): out[n] = json.loads(b[8 : 8 + struct.unpack("<Q", b[:8])[0]])
    else: out[n] = len(b)
print(json.dumps(out))
`;

let browser: Browser;
let context: BrowserContext;
let files: Record<string, Buffer>;
let dir: string;
const hubRequests: string[] = [];
const GATED = "acme/gated-qwen3";
const TOKEN = "hf_e2eTokenNotForLinks";
const gatedAuth: string[] = [];
const HUB = "https://huggingface.co";
let cut: string | null = null;
let evilDir: string;
const RANGE_LOOP = "{% for i in range(100000000) %}{% endfor %}";

beforeAll(async () => {
  files = tinyHfModel();
  dir = join(mkdtempSync(join(tmpdir(), "lab-model-")), "tiny-qwen3");
  mkdirSync(dir, { recursive: true });
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(dir, name), bytes);
  evilDir = join(dir, "..", "evil-qwen3");
  mkdirSync(evilDir, { recursive: true });
  const evilConfig = { ...JSON.parse(files["tokenizer_config.json"].toString()), chat_template: RANGE_LOOP };
  for (const [name, bytes] of Object.entries(files))
    writeFileSync(join(evilDir, name), name === "tokenizer_config.json" ? JSON.stringify(evilConfig) : bytes);
  browser = await launchChromium();
  context = await browser.newContext();
  // The fake Hub (e2e/fake-hub.ts: the endpoints and headers the official client reads). Its LFS
  // file is served by the Hub's origin here: Playwright does not route the request a fulfilled
  // redirect leads to, so the redirect to a file CDN is checked in Node (model/source.test.ts).
  const handle = fakeHub(
    {
      [REPO]: {
        commit: COMMIT,
        files: { ...files, "README.md": Buffer.from("0123456789") },
        lfs: ["model.safetensors"],
      },
      [GATED]: { commit: COMMIT, files, lfs: ["model.safetensors"], gated: "manual", tokens: [TOKEN] },
    },
    { hubUrl: HUB },
  );
  await context.route(`${HUB}/**`, async (route) => {
    const req = route.request();
    const headers = await req.allHeaders();
    const url = new URL(req.url());
    const range = headers.range ?? "";
    if (req.method() !== "OPTIONS")
      hubRequests.push(`${req.method()} ${url.pathname}${range ? ` ${range}` : ""}`);
    if (url.pathname.includes(`/${GATED}/`)) gatedAuth.push(headers.authorization ?? "");
    // A dropped connection on the first chunk of `cut` (not the client's one-byte info request).
    if (cut && range !== "bytes=0-0" && url.pathname.endsWith(`/${cut}`)) {
      cut = null;
      return route.abort("connectionreset");
    }
    const out = handle({ method: req.method(), url: req.url(), headers });
    return route.fulfill({
      status: out.status,
      headers: out.headers,
      body: out.body ? Buffer.from(out.body) : undefined,
    });
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
});

async function open(query: string): Promise<Page> {
  const page = await context.newPage();
  page.on("pageerror", (e) => console.error("pageerror", e.message));
  await page.goto(`${baseUrl}?${query}`);
  await page.getByTestId("adapter-info").waitFor({ timeout: 60_000 });
  await page.locator('details[data-group="model"]').evaluate((el) => {
    (el as HTMLDetailsElement).open = true;
  });
  return page;
}

async function runToDone(page: Page): Promise<void> {
  await expect.poll(() => page.getByTestId("config-errors").count()).toBe(0);
  await page.getByTestId("start").click();
  await expect
    .poll(
      async () => {
        const err = await page.getByTestId("app-error").allTextContents();
        if (err.length) throw new Error(`the run failed: ${err.join("; ")}`);
        return page.getByTestId("progress").getAttribute("data-phase");
      },
      { timeout: 240_000, interval: 500 },
    )
    .toBe("done");
  // Steps 0 and 1, then the final evaluation row.
  expect(Number(await page.getByTestId("latest-row").getAttribute("data-step"))).toBeGreaterThanOrEqual(1);
}

describe("pretrained models in the page", () => {
  it("says a link's local model is missing; loads one from local files, runs two RL steps and generates", async () => {
    const gone = `model.pretrained=local:gone&model.sha256=${encodeURIComponent(JSON.stringify({ "config.json": "a".repeat(64) }))}`;
    const missing = await open(`${RUN}&${gone}`);
    const banner = missing.getByTestId("run-model");
    await expect.poll(() => banner.getAttribute("data-state"), { timeout: 30_000 }).toBe("missing");
    expect(await banner.textContent()).toContain(
      "This run's model local:gone (1 files) is not in this browser: pick its files (config.json)",
    );
    await missing.close();

    const page = await open(RUN);
    await page.getByTestId("local-files").setInputFiles(Object.keys(files).map((f) => join(dir, f)));
    await expect
      .poll(() => page.locator('[data-path="model.pretrained"]').inputValue(), { timeout: 60_000 })
      .toMatch(/^local:/);
    // The plan, from the picked config.json, as the config panel shows it.
    await expect
      .poll(() => page.getByTestId("memory-plan").getAttribute("data-fits"), { timeout: 30_000 })
      .toBe("1");
    expect(await page.getByTestId("memory-plan").locator("tr[data-term]").count()).toBe(8);
    await runToDone(page);
    await page.getByTestId("tab-try").click();
    await page.getByTestId("try-prompt").fill("What is 12*7?");
    await page.getByTestId("try-generate").click();
    await page
      .locator('[data-testid="try-output"], [data-testid="try-error"]')
      .first()
      .waitFor({ timeout: 120_000 });
    expect(await page.getByTestId("try-error").allTextContents()).toEqual([]);
    expect(await page.locator('[data-testid="try-output"] [data-testid="token"]').count()).toBeGreaterThan(0);
    await page.close();
  });

  it("a model picked on the default preset: the reason and the offer at once; the pretrained recipe runs two steps and its PEFT and HF downloads hold the model", async () => {
    const page = await open("");
    await page.getByTestId("local-files").setInputFiles(Object.keys(files).map((f) => join(dir, f)));
    // Files picked one by one have no folder: named by config.json (no _name_or_path: its model_type).
    await expect
      .poll(() => page.locator('[data-path="model.pretrained"]').inputValue(), { timeout: 60_000 })
      .toBe("local:qwen3-model");
    const conflict = page.getByTestId("preset-conflict");
    await conflict.waitFor({ timeout: 30_000 });
    expect(await conflict.textContent()).toContain(
      "quick-demo starts from the lab's own checkpoint quick-demo-sft-v2.safetensors (a 2-layer character model), which cannot load into qwen3-model",
    );
    expect(await page.getByTestId("start-plan").textContent()).toContain(
      "pick a recipe made for pretrained models",
    );
    expect(await page.getByTestId("start").isDisabled()).toBe(true);
    const hashes = page.getByTestId("sha256-list").locator("li");
    expect(await hashes.count()).toBe(Object.keys(files).length);
    await page.getByTestId("offer-lab-llama-calculator").click();
    await expect.poll(() => page.getByTestId("preset-picker").inputValue()).toBe("lab-llama-calculator");
    expect(await page.locator('[data-path="model.pretrained"]').inputValue()).toBe("local:qwen3-model");
    expect(await conflict.count()).toBe(0);
    // The lab's architecture fields do not apply: read-only, from the picked config.json.
    const layers = page.locator('[data-path="model.layers"]');
    await expect.poll(() => layers.inputValue()).toBe("1 (config.json)");
    expect(await layers.getAttribute("readonly")).not.toBeNull();
    // The recipe at a software GPU's size, by its link (the picked files stay in this browser).
    const search = new URL(page.url()).search.slice(1);
    expect(search).toContain("model.sha256=");
    await page.close();
    const run = await open(
      `${search}&rl.prompts_per_step=1&rl.group_size=2&rl.minibatches=1&task.eval_size=1&task.eval_every=0&task.tokenization_check=warn&model.context=512&sampling.max_new_tokens=8&stop.max_steps=2&checkpoint_every=1`,
    );
    await runToDone(run);
    const zips: Record<string, Record<string, unknown>> = {};
    for (const kind of ["peft", "hf"]) {
      const [download] = await Promise.all([
        run.waitForEvent("download"),
        run.getByTestId(`export-${kind}`).click(),
      ]);
      const file = join(mkdtempSync(join(tmpdir(), "lab-weights-")), download.suggestedFilename());
      await download.saveAs(file);
      // Unzipped by Python's zipfile: the names, each JSON file, each safetensors header.
      zips[kind] = JSON.parse(execFileSync("python3", ["-c", UNZIP, file], { encoding: "utf8" })) as Record<
        string,
        unknown
      >;
    }
    const peft = zips.peft as Record<string, any>;
    expect(Object.keys(peft).sort()).toEqual([
      "README.md",
      "adapter_config.json",
      "adapter_model.safetensors",
    ]);
    expect(peft["adapter_config.json"]).toMatchObject({
      base_model_name_or_path: "qwen3-model",
      peft_type: "LORA",
      r: 8,
      lora_alpha: 16,
      target_modules: ["down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj", "v_proj"],
    });
    const at = peft["adapter_model.safetensors"];
    expect(Object.keys(at).filter((k) => k !== "__metadata__")).toHaveLength(14);
    expect(at["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"]).toMatchObject({
      dtype: "F32",
      shape: [16, 8],
    });
    expect(at["base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight"].shape).toEqual([8, 8]);
    expect(at["base_model.model.model.layers.0.mlp.down_proj.lora_A.weight"].shape).toEqual([8, 24]);
    const hf = zips.hf as Record<string, any>;
    expect(Object.keys(hf).sort()).toEqual([
      "README.md",
      "config.json",
      "model.safetensors",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    // The source's config.json, unchanged by training.
    expect(hf["config.json"]).toEqual(JSON.parse(files["config.json"].toString()));
    const mt = hf["model.safetensors"];
    expect(mt["model.layers.0.self_attn.q_proj.weight"]).toMatchObject({ dtype: "F32", shape: [16, 16] });
    expect(mt["model.layers.0.mlp.gate_proj.weight"].shape).toEqual([24, 16]);
    expect(mt["lm_head.weight"]).toBeUndefined(); // tied, as the source
    await run.close();
  });

  it("a model whose chat template loops over range(100000000) is refused when picked, nothing of it cached; the page stays usable", async () => {
    const page = await open(RUN);
    await page.getByTestId("model-cache").evaluate((el) => {
      (el as HTMLDetailsElement).open = true;
    });
    const cached = async () => (await page.getByTestId("model-cache").textContent()) ?? "";
    await expect.poll(cached).toMatch(/Model cache: \d+ models/);
    const before = { cache: await cached(), search: await page.evaluate(() => location.search) };
    await page.getByTestId("local-files").setInputFiles(Object.keys(files).map((f) => join(evilDir, f)));
    const refusal =
      "tokenizer_config.json: chat_template refused by the template sandbox's maxRange budget: range(0, 100000000, 1) has 100000000 items; the template sandbox allows 100000 (Jinja2's MAX_RANGE)";
    await expect
      .poll(() => page.getByTestId("model-error").textContent(), { timeout: 60_000 })
      .toContain(refusal);
    expect(await page.getByTestId("model-error").textContent()).toContain(
      "(nothing of local:qwen3-model is kept in this browser)",
    );
    // Not in the cache, not the run's model: the cache, the form and the link are as they were.
    expect(await cached()).toBe(before.cache);
    expect(await page.evaluate(() => location.search)).toBe(before.search);
    expect(await page.getByTestId("run-model").count()).toBe(0);
    // The page and its worker still answer: the good files are accepted and planned.
    await page.getByTestId("local-files").setInputFiles(Object.keys(files).map((f) => join(dir, f)));
    const state = page.getByTestId("run-model");
    await expect.poll(() => state.getAttribute("data-state"), { timeout: 60_000 }).toBe("cached");
    await expect
      .poll(() => page.getByTestId("memory-plan").getAttribute("data-fits"), { timeout: 30_000 })
      .toBe("1");
    await page.close();
  });

  it("a gated model: without a token it says so and where to ask for access; with one it downloads, the token in no link", async () => {
    const page = await open(RUN);
    await page.getByTestId("hub-repo").fill(GATED);
    await page.getByTestId("hub-check").click();
    await expect
      .poll(() => page.getByTestId("model-error").textContent(), { timeout: 30_000 })
      .toContain(
        `the model is gated or private (HTTP 401): ask for access on https://huggingface.co/${GATED}`,
      );
    expect(gatedAuth).toEqual([""]);
    await page.getByTestId("hub-token").fill(TOKEN);
    await page.getByTestId("hub-check").click();
    await page.getByTestId("hub-download").click();
    await expect.poll(() => page.getByTestId("hub-use").count(), { timeout: 60_000 }).toBe(1);
    expect(gatedAuth.length).toBeGreaterThan(2);
    expect(gatedAuth.slice(1).every((a) => a === `Bearer ${TOKEN}`)).toBe(true);
    await page.getByTestId("hub-use").click();
    // Kept in this browser only: in localStorage, not in the address bar, the config or the share link.
    expect(await page.evaluate(() => localStorage.getItem("lab.hubToken"))).toBe(TOKEN);
    await expect.poll(() => page.evaluate(() => location.search)).toContain("gated-qwen3");
    expect(await page.evaluate(() => location.href)).not.toContain(TOKEN);
    expect(await page.evaluate(() => document.body.textContent)).not.toContain(TOKEN);
    await page.close();
  });

  it("a link naming a Hub model offers the download; an interrupted download resumes; the second open makes no request", async () => {
    const link = `${RUN}&model.pretrained=hf:${REPO}&model.revision=main`;
    hubRequests.length = 0; // the gated-model case before this one asks the same fake Hub
    const page = await open(link);
    const state = page.getByTestId("run-model");
    await expect.poll(() => state.getAttribute("data-state"), { timeout: 30_000 }).toBe("missing");
    const total = Object.values(files).reduce((a, b) => a + b.length, 0);
    expect(hubRequests.length).toBeGreaterThan(0);
    expect(
      hubRequests.every(
        (r) =>
          r === `GET /api/models/${REPO}/revision/main` || r === `GET /api/models/${REPO}/tree/${COMMIT}`,
      ),
      JSON.stringify(hubRequests),
    ).toBe(true);
    expect(await state.textContent()).toContain(`is not downloaded (${formatBytes(total)})`);

    // The weights' request drops: the files before them stay cached.
    hubRequests.length = 0;
    cut = "model.safetensors";
    await page.getByTestId("run-model-download").click();
    await expect
      .poll(() => page.getByTestId("model-error").textContent(), { timeout: 30_000 })
      .toContain("model.safetensors bytes 0-");
    expect(await page.getByTestId("model-error").textContent()).toContain("downloading again resumes here");
    const first = [...hubRequests];
    expect(first.some((r) => r.includes("/config.json bytes=0-"))).toBe(true);
    // Resume: only what is missing is fetched.
    hubRequests.length = 0;
    await page.getByTestId("run-model-download").click();
    await expect.poll(() => state.getAttribute("data-state"), { timeout: 30_000 }).toBe("cached");
    const size = files["model.safetensors"].length;
    const rest = Object.keys(files).filter((f) => !first.some((r) => r.includes(`/${f} `)));
    // Per file, the client's one-byte info request (fileDownloadInfo), then the chunk.
    const resolve = (f: string) => `GET /${REPO}/resolve/${COMMIT}/${f}`;
    expect(hubRequests.filter((r) => !r.includes("/api/")).sort()).toEqual(
      [
        `${resolve("model.safetensors")} bytes=0-0`,
        `${resolve("model.safetensors")} bytes=0-${size - 1}`,
        ...rest.flatMap((f) => [`${resolve(f)} bytes=0-0`, `${resolve(f)} bytes=0-${files[f].length - 1}`]),
      ].sort(),
    );
    await page.getByTestId("model-cache").evaluate((el) => {
      (el as HTMLDetailsElement).open = true;
    });
    await expect
      .poll(() => page.getByTestId("cache-entry").allTextContents())
      .toContain(`hf:${REPO}@main · ${formatBytes(total)}`);
    await page.close();

    // The second open: the model loads and trains from the cache alone.
    hubRequests.length = 0;
    const again = await open(link);
    await expect
      .poll(() => again.getByTestId("run-model").getAttribute("data-state"), { timeout: 30_000 })
      .toBe("cached");
    await runToDone(again);
    expect(hubRequests).toEqual([]);
    // Clearing the cache: the link's model is missing again.
    await again.getByTestId("model-cache").evaluate((el) => {
      (el as HTMLDetailsElement).open = true;
    });
    await again.getByTestId("cache-clear").click();
    await expect.poll(() => again.getByTestId("cache-entry").count()).toBe(0);
    await again.close();
  });
});
