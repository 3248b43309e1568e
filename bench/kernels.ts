// The kernels benchmark: our matmul vs tfjs-backend-webgpu's tf.matMul (GFLOP/s) on square f32
// matrices 256/512/1024 (+2048 when not quick), in ONE headless Chromium run on one adapter.
// bench/kernels-page.ts is bundled with Vite into a temp dir, served from http://localhost (WebGPU
// needs a secure context) and driven through playwright-core. Rows: matmul_vs_tfjs_<n>.
// Run standalone: npx tsx bench/kernels.ts [--full]   (npm run bench calls runKernelsBench)
// Dev harness in the browser: npx tsx bench/kernels.ts --variants [name regex] [sizes]
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import type { VariantResult } from "../kernels/dev/matmul-variants";
import type { PageResult } from "./kernels-page";
import { inBenchPage } from "./page";
import { type BenchAdapter, type BenchRow, makeRow } from "./report";

/** Bundles and serves the page, opens it in headless Chromium, and runs `fn` there. */
function inPage<T>(fn: (page: Page) => Promise<T>): Promise<T> {
  return inBenchPage("kernels-page.ts", "kernels", "kernelsBench", fn);
}

export async function runKernelsBench(opts: {
  quick: boolean;
}): Promise<{ rows: BenchRow[]; adapter: BenchAdapter }> {
  const sizes = opts.quick ? [256, 512, 1024] : [256, 512, 1024, 2048];
  const reps = opts.quick ? 3 : 7;
  return inPage(async (page) => {
    const result = (await page.evaluate(
      ([s, r]) =>
        (
          globalThis as unknown as { kernelsBench: (s: number[], r: number) => Promise<unknown> }
        ).kernelsBench(s, r),
      [sizes, reps] as const,
    )) as PageResult;
    const rows = result.sizes.map((s) =>
      makeRow({
        id: `matmul_vs_tfjs_${s.n}`,
        group: "kernels",
        ours: s.ours,
        baseline: s.tfjs,
        unit: "GFLOP/s",
        better: "higher",
        note: `baseline tf.matMul (tfjs-backend-webgpu); ${s.inner} products per timing; max |ours - tfjs| ${s.maxDiff.toExponential(1)}, |ours - f64| ${s.refErr.toExponential(1)}${result.adapter.isFallback ? "; software adapter" : ""}`,
      }),
    );
    const { vendor, architecture, description } = result.adapter;
    return { rows, adapter: { vendor, architecture, description } };
  });
}

/** The kernels/dev matmul variants checked and timed in the browser (not part of the report). */
export async function runMatmulDev(sizes: number[], reps: number, only?: string): Promise<VariantResult[]> {
  return inPage((page) =>
    page.evaluate(
      ([s, r, o]) =>
        (
          globalThis as unknown as {
            kernelsDev: (s: number[], r: number, o?: string) => Promise<VariantResult[]>;
          }
        ).kernelsDev(s, r, o),
      [sizes, reps, only] as const,
    ),
  );
}

const argv = process.argv;
if (argv[1] && fileURLToPath(import.meta.url) === argv[1] && argv.includes("--variants")) {
  // npx tsx bench/kernels.ts --variants [regex] [sizes, e.g. 256,512]
  const at = argv.indexOf("--variants");
  const sizes = (argv[at + 2] ?? "256").split(",").map(Number);
  for (const r of await runMatmulDev(sizes, 3, argv[at + 1])) {
    console.log(
      `${r.name.padEnd(38)} n=${r.size} ${r.ok ? "ok  " : "FAIL"} ${r.ms.toFixed(1)} ms ${r.gflops.toFixed(3)} GFLOP/s`,
    );
  }
} else if (argv[1] && fileURLToPath(import.meta.url) === argv[1]) {
  const t0 = Date.now();
  const { rows, adapter } = await runKernelsBench({ quick: !process.argv.includes("--full") });
  console.log(`adapter: ${adapter.vendor} ${adapter.architecture} ${adapter.description}`);
  for (const r of rows) {
    console.log(
      `${r.id.padEnd(22)} ours ${r.ours.toFixed(2)} ${r.unit}  tfjs ${r.baseline.toFixed(2)}  ratio ${r.ratio.toFixed(2)}x  spread ${(r.spread * 100).toFixed(0)}%  (${r.note})`,
    );
  }
  console.log(`took ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}
