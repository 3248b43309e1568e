// The kernel plan: which variant of each op runs on a device, in one read-only table. A plan is
// chosen once per device from what WebGPU reports (adapter info, isFallbackAdapter, subgroup
// sizes, features, limits) and every Runtime on that device reads it; nothing else picks a
// kernel. LAB_KERNEL_PLAN (Node) or the page's `plan=` URL parameter names a plan to force, for
// tests and benchmarks: forcing "discrete" on lavapipe runs the GPUs' kernels at the adapter's
// real subgroup size. Entries that need the `subgroups` feature are dropped where the device
// lacks it, and the choice says so. Shown in the page's GPU panel and recorded in run.json.
// Tested by kernels/plan.test.ts and kernels/plan.gpu.test.ts.
import { canUseSubgroups, isSoftwareAdapter } from "./device";

export const PLAN_NAMES = ["discrete", "integrated", "cpu", "swiftshader", "no-subgroups"] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface KernelPlan {
  readonly name: PlanName;
  /**
   * The tiled products' source: "tiled" matmul.wgsl (one pipeline for every form), "unrolled"
   * matmul-gen.ts and attention-gen.ts (register tiles as named variables; SwiftShader turns any
   * dynamically indexed array into per-lane gathers).
   */
  readonly matmul: "tiled" | "unrolled";
  /**
   * The products that fit it run as matmul-subgroup.ts's kernel (lanes share A by
   * subgroupBroadcast), where the adapter has one fixed subgroup size, a multiple of 4.
   */
  readonly subgroupMatmul: boolean;
  /** The tiled matmul's threads (x, y) where nothing was tuned (each thread an 8x8 block). */
  readonly matmulTile: readonly [number, number];
  /** Whether the tile is measured at the first model on the device (autotune.ts; every tile gives the same bits). */
  readonly tuneMatmulTile: boolean;
  /**
   * A·Bᵀ of at most this many rows runs as a matvec (linear-rows.wgsl, matvec.wgsl where K is
   * not a multiple of 4) and a decode block as decode.ts's 6 fused dispatches; more rows run the
   * tiles. 1 on SwiftShader, whose unrolled tiles beat the matvec from 4 rows up.
   */
  readonly smallRows: number;
  /** linear-rows takes A's rows from each other's lanes by subgroupShuffle (one fixed subgroup size >= M). */
  readonly rowsShuffle: boolean;
  /**
   * Training attention: "loop" one thread per query or key (attention.wgsl), "blocked" several
   * rows of a GQA group per thread sharing each K/V load, no barrier (attention-blocked.wgsl),
   * "tiled" K/V tiles in workgroup memory (attention-tiled.wgsl, falling back to blocked where a
   * tile does not fit maxComputeWorkgroupStorageSize).
   */
  readonly attention: "loop" | "blocked" | "tiled";
  /** Row reductions: subgroupAdd/subgroupMax (reduce-subgroup.wgsl) or a workgroup tree. */
  readonly reductions: "subgroup" | "workgroup";
  /**
   * Threads of a row reduction: "subgroup" one subgroup where the reductions are subgroup ones
   * (a CPU rasteriser's SIMD lanes: no barrier at all), "fit" a power of two near n/3 from
   * `minRowThreads` to 256.
   */
  readonly rowThreads: "subgroup" | "fit";
  readonly minRowThreads: number;
  /** Tokens a generation session samples per submit at most (decodeMany). */
  readonly decodeWindow: number;
}

const GPU_ROW = {
  matmul: "tiled",
  subgroupMatmul: false,
  matmulTile: [8, 8],
  tuneMatmulTile: true,
  smallRows: 8,
  rowsShuffle: false,
  attention: "tiled",
  reductions: "subgroup",
  rowThreads: "fit",
  minRowThreads: 32,
  decodeWindow: 16,
} as const;

/** THE table: op -> variant per plan. */
export const PLANS: Readonly<Record<PlanName, KernelPlan>> = Object.freeze({
  // warps of 32, wide workgroups cheap, barriers cheap: tiles in workgroup memory
  discrete: Object.freeze({ name: "discrete", ...GPU_ROW }),
  // the discrete plan until an integrated GPU measures otherwise (its own row so it can differ)
  integrated: Object.freeze({ name: "integrated", ...GPU_ROW }),
  // lavapipe / llvmpipe: a workgroup is one CPU thread, its SIMD lanes the subgroup; barriers are
  // coroutine switches, so the kernels share data through subgroups and avoid barriers
  cpu: Object.freeze({
    name: "cpu",
    matmul: "tiled",
    subgroupMatmul: true,
    matmulTile: [8, 8] as const,
    tuneMatmulTile: true,
    smallRows: 8,
    rowsShuffle: true,
    attention: "blocked",
    reductions: "subgroup",
    rowThreads: "subgroup",
    minRowThreads: 16,
    decodeWindow: 16,
  }),
  // SwiftShader: the unrolled kernels
  swiftshader: Object.freeze({
    name: "swiftshader",
    matmul: "unrolled",
    subgroupMatmul: false,
    matmulTile: [8, 8] as const,
    tuneMatmulTile: false,
    smallRows: 1,
    rowsShuffle: false,
    attention: "loop",
    reductions: "subgroup",
    rowThreads: "subgroup",
    minRowThreads: 16,
    decodeWindow: 16,
  }),
  // no `subgroups` (Firefox's wgpu): the GPU plan with workgroup trees
  "no-subgroups": Object.freeze({ name: "no-subgroups", ...GPU_ROW, reductions: "workgroup" }),
});

/** The plan a device runs, why, and what was measured for it. */
export interface PlanChoice {
  readonly plan: KernelPlan;
  /** How it was chosen: the adapter facts, or the override that forced it. */
  readonly why: string;
  /** Entries the device could not take (a forced plan's subgroup kernels without `subgroups`). */
  readonly dropped: readonly string[];
}

function isPlanName(s: string): s is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(s);
}

/** LAB_KERNEL_PLAN in Node, else `plan=` in the page's URL (a worker gets it as its name `plan=...`). */
export function planOverride(): string | undefined {
  const g = globalThis as {
    process?: { env?: Record<string, string | undefined> };
    location?: { search?: string };
    name?: unknown;
  };
  const env = g.process?.env?.LAB_KERNEL_PLAN;
  if (env) return env;
  const url = g.location?.search ? new URLSearchParams(g.location.search).get("plan") : null;
  if (url) return url;
  if (typeof g.name === "string" && g.name.startsWith("plan=")) return g.name.slice(5) || undefined;
  return undefined;
}

type Info = Partial<GPUAdapterInfo> & { isFallbackAdapter?: boolean };

/** What choosePlan reads of a device (a plain object in unit tests). */
export interface PlanInputs {
  info: Info | undefined;
  /** The `subgroups` feature and the subgroup_id builtins (device.ts canUseSubgroups). */
  subgroups: boolean;
}

/** The plan for an adapter (no override): fallback/software -> cpu or swiftshader; no subgroups -> no-subgroups; vendor -> integrated or discrete. */
export function planFor(x: PlanInputs): { name: PlanName; why: string } {
  const info = x.info;
  const text = `${info?.vendor ?? ""} ${info?.architecture ?? ""} ${info?.description ?? ""} ${info?.device ?? ""}`;
  if (/swiftshader/i.test(text)) return { name: "swiftshader", why: "adapter info names SwiftShader" };
  if (isSoftwareAdapter(info))
    return {
      name: "cpu",
      why: info?.isFallbackAdapter ? "isFallbackAdapter" : "adapter info names a CPU rasteriser",
    };
  if (!x.subgroups) return { name: "no-subgroups", why: "no subgroups feature (or no subgroup_id builtins)" };
  // WebGPU does not say integrated or discrete: the vendors whose GPUs share the CPU's memory
  if (
    /apple|intel|arm|qualcomm|imagination|mali|adreno|powervr/i.test(
      `${info?.vendor ?? ""} ${info?.architecture ?? ""}`,
    )
  )
    return { name: "integrated", why: `vendor ${info?.vendor || "?"} (integrated GPUs)` };
  return { name: "discrete", why: `vendor ${info?.vendor || "unknown"}` };
}

/** The plan for these inputs, the override (if any) applied, entries the device cannot take dropped. */
export function resolvePlan(x: PlanInputs, override = planOverride()): PlanChoice {
  let name: PlanName;
  let why: string;
  if (override !== undefined) {
    if (!isPlanName(override))
      throw new Error(
        `kernel plan override "${override}" (LAB_KERNEL_PLAN / plan=): expected one of ${PLAN_NAMES.join(", ")}`,
      );
    name = override;
    why = `forced by LAB_KERNEL_PLAN / plan=${override}`;
  } else ({ name, why } = planFor(x));
  let plan = PLANS[name];
  const dropped: string[] = [];
  if (!x.subgroups) {
    const off: Partial<Record<keyof KernelPlan, unknown>> = {};
    if (plan.reductions === "subgroup") off.reductions = "workgroup";
    if (plan.subgroupMatmul) off.subgroupMatmul = false;
    if (plan.rowsShuffle) off.rowsShuffle = false;
    if (plan.rowThreads === "subgroup") off.rowThreads = "fit";
    for (const k of Object.keys(off)) dropped.push(`${k} (no subgroups)`);
    if (dropped.length) plan = Object.freeze({ ...plan, ...off }) as KernelPlan;
  }
  return Object.freeze({ plan, why, dropped: Object.freeze(dropped) });
}

const chosen = new WeakMap<GPUDevice, PlanChoice>();

/** The device's plan, chosen on first ask (at device creation by createGpu) and kept for its life. */
export function devicePlan(device: GPUDevice): PlanChoice {
  let c = chosen.get(device);
  if (!c) {
    const info = (device as GPUDevice & { adapterInfo?: Info }).adapterInfo;
    c = resolvePlan({ info, subgroups: canUseSubgroups(device) });
    chosen.set(device, c);
  }
  return c;
}

/** A variant of a plan (tests and kernels/dev comparisons): `base` with `changes`, frozen. */
export function planWith(base: KernelPlan, changes: Partial<Omit<KernelPlan, "name">>): KernelPlan {
  return Object.freeze({ ...base, ...changes });
}

/** One line per plan entry, for the GPU panel, run.json and the bench notes. */
export function describePlan(c: PlanChoice, tile?: readonly [number, number]): string {
  const p = c.plan;
  const parts = [
    `plan ${p.name} (${c.why})`,
    `matmul ${p.matmul}${p.subgroupMatmul ? "+subgroup" : ""} tile ${(tile ?? p.matmulTile).join("x")}${p.tuneMatmulTile ? (tile ? " tuned" : " untuned") : ""}`,
    `small rows <= ${p.smallRows}${p.rowsShuffle ? " shuffle" : ""}`,
    `attention ${p.attention}`,
    `reductions ${p.reductions}/${p.rowThreads}`,
    `decode window ${p.decodeWindow}`,
  ];
  if (c.dropped.length) parts.push(`dropped: ${c.dropped.join(", ")}`);
  return parts.join("; ");
}
