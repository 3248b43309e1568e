// The peers group's transformers.js row (bench/peers.ts): greedy KV-cache decoding at batch 1 with
// the lab-made model (public/models/lab-llama), the lab's WebGPU engine against transformers.js on
// onnxruntime-web's WebGPU backend, in one headless Chromium page on one adapter (SwiftShader).
// The model goes to ONNX through PyTorch's exporter (bench/peers/export_onnx.py, the engines venv,
// checked there against transformers); transformers.js comes from bench/peers/web (npm run
// peers:setup) and is bundled with Vite from there; its wasm files are served by the bench's
// server (no CDN). Reps interleave the two sides; both decode the same prompt greedily, and the
// row records whether their tokens agree.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";
import { enginesPython } from "../export/engines/venv";
import { chatFormatOf, taskOf } from "../rl/run/run-parts";
import { inBenchPage } from "./page";
import { type BenchRow, makeRow } from "./report";

const HERE = dirname(fileURLToPath(import.meta.url));
const WEB = join(HERE, "peers", "web");
const MODEL = resolve(HERE, "../public/models/lab-llama");
const RECIPE = resolve(HERE, "../public/recipes/lab-llama-calculator.json");

/** Why the transformers.js side cannot run here, or null. */
export function peersWebProblem(): string | null {
  const pkg = join(WEB, "node_modules", "@huggingface", "transformers", "package.json");
  if (!existsSync(pkg)) return `transformers.js is not installed in ${WEB}: run npm run peers:setup`;
  const want = JSON.parse(readFileSync(join(WEB, "package.json"), "utf8")).dependencies[
    "@huggingface/transformers"
  ];
  const have = JSON.parse(readFileSync(pkg, "utf8")).version;
  if (have !== want) return `${WEB} has transformers.js ${have}, not ${want}: run npm run peers:setup`;
  return null;
}

interface Side {
  s: number;
  /** The lab's n tokens one decode() each (a submit and a readback per token). */
  sStep?: number;
  tokens: number[];
  adapter: string;
  plan?: string;
}

/**
 * How many leading greedy tokens agree, over those before the lab's first end token: the baseline
 * runs on past it (min_new_tokens keeps every rep at n tokens), so only those compare.
 */
function agreeing(a: number[], b: number[], eos: number): { same: number; of: number } {
  let of = Math.min(a.length, b.length);
  const end = a.indexOf(eos);
  if (end >= 0) of = Math.min(of, end);
  let same = 0;
  while (same < of && a[same] === b[same]) same++;
  return { same, of };
}

/** A held-out calculator prompt through the lab-made model's own chat template, as the recipe renders it. */
async function calculatorPrompt(): Promise<number[]> {
  const recipe = JSON.parse(readFileSync(RECIPE, "utf8"));
  const readFile = async (p: string) => new Uint8Array(readFileSync(join(HERE, "..", "public", p)));
  const chat = await chatFormatOf(recipe.config, readFile);
  return chat.promptTokens(taskOf(recipe.config).evalSet(1)[0].messages);
}

/**
 * The page's files beside the lab's bundle (bench.js): transformers.js's bundle (tjs.js), the two
 * model folders and onnxruntime-web's wasm; returns the index.html that loads both bundles.
 */
async function pageFiles(dir: string, onnxModel: string): Promise<string> {
  await build({
    configFile: false,
    logLevel: "warn",
    root: WEB,
    build: {
      outDir: dir,
      emptyOutDir: false,
      target: "es2022",
      minify: false,
      lib: { entry: join(WEB, "entry.js"), formats: ["es"], fileName: () => "tjs.js" },
    },
  });
  mkdirSync(join(dir, "ort"));
  // the wasm builds onnxruntime-web picks from at run time (served under /ort/)
  const ortDist = join(WEB, "node_modules", "onnxruntime-web", "dist");
  for (const f of readdirSync(ortDist).filter((f) => /^ort-wasm-.*\.(mjs|wasm)$/.test(f)))
    copyFileSync(join(ortDist, f), join(dir, "ort", f));
  mkdirSync(join(dir, "lab-llama"));
  for (const f of ["config.json", "model.safetensors"])
    copyFileSync(join(MODEL, f), join(dir, "lab-llama", f));
  mkdirSync(join(dir, "tjs-model", "onnx"), { recursive: true });
  for (const f of ["config.json", "generation_config.json", "onnx/model.onnx"]) {
    const from = join(onnxModel, f);
    if (existsSync(from)) copyFileSync(from, join(dir, "tjs-model", f));
  }
  return `<!doctype html><meta charset="utf-8"><script type="module" src="bench.js"></script><script type="module" src="tjs.js"></script>`;
}

export async function tjsRows(opts: { quick?: boolean } = {}): Promise<BenchRow[]> {
  const problem = peersWebProblem();
  if (problem) throw new Error(problem);
  const reps = 3;
  const n = opts.quick ? 16 : 64;
  const work = mkdtempSync(join(tmpdir(), "lab-peers-tjs-"));
  try {
    const ex = spawnSync(
      enginesPython(),
      [join(HERE, "peers", "export_onnx.py"), "--model", MODEL, "--out", join(work, "onnx-model")],
      { encoding: "utf8", env: { ...process.env, PYTHONUNBUFFERED: "1" } },
    );
    if (ex.status !== 0) throw new Error(`bench/peers/export_onnx.py: ${ex.stderr.slice(-3000)}`);
    const exportCheck = JSON.parse(ex.stdout.trim().split("\n").pop() ?? "{}");
    const config = JSON.parse(readFileSync(join(MODEL, "config.json"), "utf8"));
    const V = config.vocab_size as number;
    const prompt = await calculatorPrompt();
    const prepare = (dir: string) => pageFiles(dir, join(work, "onnx-model"));
    return await inBenchPage(
      "peers-tjs-page.ts",
      "peers-tjs",
      ["labDecode", "tjsDecode"],
      async (page) => {
        const run = (side: "labDecode" | "tjsDecode", model: string) =>
          page.evaluate(
            ([f, spec]) => (globalThis as unknown as Record<string, (s: unknown) => Promise<Side>>)[f](spec),
            [side, { model, prompt, n }] as const,
          );
        // warm-up (pipeline compiles, session creation), then interleaved reps
        await run("labDecode", "lab-llama");
        await run("tjsDecode", "tjs-model");
        const lab: Side[] = [];
        const tjs: Side[] = [];
        for (let i = 0; i < reps; i++) {
          lab.push(await run("labDecode", "lab-llama"));
          tjs.push(await run("tjsDecode", "tjs-model"));
        }
        const agree = agreeing(lab[0].tokens, tjs[0].tokens, config.eos_token_id as number);
        const rate = (xs: Side[]) => xs.map((x) => n / x.s);
        const versions = JSON.parse(
          readFileSync(join(WEB, "node_modules", "@huggingface", "transformers", "package.json"), "utf8"),
        ).version;
        const ort = JSON.parse(
          readFileSync(join(WEB, "node_modules", "onnxruntime-web", "package.json"), "utf8"),
        ).version;
        return [
          makeRow({
            id: "tjs_lab_llama_decode_b1",
            group: "peers",
            ours: rate(lab),
            baseline: rate(tjs),
            unit: "tokens/s",
            better: "higher",
            note: `the lab-made Llama (d48 L2, 4 heads of 12 over 2, vocab ${V}, f32), greedy KV-cache decode at batch 1 after a held-out calculator prompt (${prompt.length} tokens, the model's chat template) and a first token: ${n} timed tokens, ${reps} interleaved reps after a warm-up, in one headless Chromium page on ${lab[0].adapter}; ours the lab's WebGPU engine (plan ${lab[0].plan}, decodeMany as a rollout decodes): ${rate(
              lab,
            )
              .map((x) => x.toFixed(1))
              .join(
                "/",
              )} tokens/s (one decode() a token, a readback each: ${lab.map((x) => (n / (x.sStep ?? Number.NaN)).toFixed(1)).join("/")}); baseline transformers.js ${versions} (onnxruntime-web ${ort}, WebGPU, fp32) generate() on the ONNX export of the same weights (PyTorch ${exportCheck.torch}'s exporter, |logits - transformers| ${Number(exportCheck.cached_logits_max_diff).toExponential(1)} in onnxruntime ${exportCheck.onnxruntime}): ${rate(
              tjs,
            )
              .map((x) => x.toFixed(1))
              .join(
                "/",
              )} tokens/s, timed as generate(1 + n) - generate(1); greedy tokens agree on ${agree.same} of ${agree.of} (those before the lab's first end token)`,
          }),
        ];
      },
      prepare,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
