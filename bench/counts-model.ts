// GPU performance on paper: the work the engine counts per dispatch (Runtime.work: FLOPs and the
// least global-memory traffic of each op), turned into a step time on named GPUs by a per-dispatch
// roofline. Each dispatch takes at least max(FLOPs / peak FLOP/s, bytes / bandwidth); a step is
// the sum of those floors plus a stated cost per dispatch and per readback (the CPU waiting on
// the GPU). The counts are made at 1, 2 and 3 layers (bench/counts.ts) and are linear in the
// layer count, so a + b * layers from 1 and 2 layers predicts 3 (checked) and the real depth.
// Pure functions; bench/counts.ts measures, bench/counts.test.ts checks these.
// `npm run bench:doc` regenerates the table between `<!-- counts-table: FILE -->` and
// `<!-- /counts-table -->` in docs/PERFORMANCE.md from the committed file.

/** A GPU's published peak: FP32 FLOP/s and memory bandwidth, and where the figures come from. */
export interface NamedGpu {
  id: string;
  name: string;
  /** FP32 peak, TFLOP/s (a fused multiply-add counted as 2). */
  tflops: number;
  /** Memory bandwidth, GB/s. */
  gbs: number;
  source: string;
}

export const NAMED_GPUS: readonly NamedGpu[] = [
  {
    id: "iris-xe",
    name: "Intel Iris Xe (96 EU, laptop iGPU)",
    tflops: 2.07,
    gbs: 68.3,
    source: "96 EUs x 16 FP32 FLOP/clock x 1.35 GHz; LPDDR4X-4266 on 128 bits (Intel's Tiger Lake data)",
  },
  {
    id: "apple-m2",
    name: "Apple M2 (10-core GPU)",
    tflops: 3.6,
    gbs: 100,
    source: "Apple's M2 announcement: 3.6 TFLOPS, 100 GB/s unified memory",
  },
  {
    id: "rtx4060-laptop",
    name: "NVIDIA RTX 4060 Laptop",
    tflops: 14.6,
    gbs: 256,
    source: "3,072 CUDA cores x 2 x 2.37 GHz (NVIDIA's top boost); 128-bit GDDR6 at 16 Gbps",
  },
];

/**
 * What a dispatch and a readback cost beyond the roofline: stated, not measured on these GPUs
 * (WebGPU's per-dispatch cost on native backends is a few microseconds; a mapAsync round trip in
 * a browser waits for the queue and a task, about a millisecond).
 */
export const OVERHEADS = { dispatchUs: 5, readbackMs: 1 } as const;

/** One dispatch's counted work. */
export interface DispatchCount {
  label: string;
  flops: number;
  bytes: number;
}

/** Counted work of one phase at one depth, with each named GPU's roofline floor (seconds). */
export interface PhaseCount {
  dispatches: number;
  flops: number;
  bytes: number;
  submits: number;
  readbacks: number;
  /** Σ over dispatches of max(flops / peak, bytes / bandwidth), per NamedGpu id. */
  floorS: Record<string, number>;
  /** The share of floorS[id] spent in compute-bound dispatches, per id. */
  computeBoundShare: Record<string, number>;
}

export const PHASES = ["rollout", "old-logprobs", "update"] as const;
export type Phase = (typeof PHASES)[number];

export interface DepthCount {
  layers: number;
  /** The step's wall time on the adapter that counted it (not a GPU's). */
  wallS: number;
  phases: Record<Phase, PhaseCount>;
}

export interface ModelCount {
  id: string;
  name: string;
  /** The real depth the table extrapolates to. */
  layers: number;
  shape: string;
  depths: DepthCount[];
}

export interface CountsReport {
  date: string;
  adapter: string;
  plan: string;
  planWhy: string;
  gpus: NamedGpu[];
  overheads: typeof OVERHEADS;
  models: ModelCount[];
}

/** The roofline floor of each dispatch, summed, per GPU; and the share of it that is compute-bound. */
export function roofline(
  log: readonly DispatchCount[],
  gpus: readonly NamedGpu[],
): Pick<PhaseCount, "floorS" | "computeBoundShare"> {
  const floorS: Record<string, number> = {};
  const computeBoundShare: Record<string, number> = {};
  for (const g of gpus) {
    let total = 0;
    let compute = 0;
    for (const d of log) {
      const tc = d.flops / (g.tflops * 1e12);
      const tm = d.bytes / (g.gbs * 1e9);
      total += Math.max(tc, tm);
      if (tc > tm) compute += tc;
    }
    floorS[g.id] = total;
    computeBoundShare[g.id] = total > 0 ? compute / total : 0;
  }
  return { floorS, computeBoundShare };
}

/** A phase's counts from its dispatch log and its round-trip counters. */
export function phaseCount(
  log: readonly DispatchCount[],
  trips: { submits: number; readbacks: number },
  gpus: readonly NamedGpu[],
): PhaseCount {
  let flops = 0;
  let bytes = 0;
  for (const d of log) {
    flops += d.flops;
    bytes += d.bytes;
  }
  return { dispatches: log.length, flops, bytes, ...trips, ...roofline(log, gpus) };
}

/** The linear quantities of a phase, flattened (every one is a + b * layers). */
function linear(p: PhaseCount): Record<string, number> {
  const out: Record<string, number> = {
    dispatches: p.dispatches,
    flops: p.flops,
    bytes: p.bytes,
    submits: p.submits,
    readbacks: p.readbacks,
  };
  for (const [id, s] of Object.entries(p.floorS)) {
    out[`floor:${id}`] = s;
    out[`compute:${id}`] = s * (p.computeBoundShare[id] ?? 0);
  }
  return out;
}

/** A phase at `layers` from the counts at two depths (a + b * layers through both). */
export function extrapolate(a: DepthCount, b: DepthCount, phase: Phase, layers: number): PhaseCount {
  if (a.layers === b.layers) throw new Error("extrapolate: two different depths are needed");
  const [la, lb] = [linear(a.phases[phase]), linear(b.phases[phase])];
  const at = (k: string) => la[k] + ((lb[k] - la[k]) * (layers - a.layers)) / (b.layers - a.layers);
  const floorS: Record<string, number> = {};
  const computeBoundShare: Record<string, number> = {};
  for (const id of Object.keys(a.phases[phase].floorS)) {
    floorS[id] = at(`floor:${id}`);
    computeBoundShare[id] = floorS[id] > 0 ? at(`compute:${id}`) / floorS[id] : 0;
  }
  return {
    dispatches: Math.round(at("dispatches")),
    flops: at("flops"),
    bytes: at("bytes"),
    submits: Math.round(at("submits")),
    readbacks: Math.round(at("readbacks")),
    floorS,
    computeBoundShare,
  };
}

/** The largest relative difference between a phase predicted by extrapolation and as counted. */
export function linearityError(predicted: PhaseCount, counted: PhaseCount): number {
  const [p, c] = [linear(predicted), linear(counted)];
  let worst = 0;
  for (const k of Object.keys(c)) {
    const d = Math.abs(p[k] - c[k]);
    worst = Math.max(worst, c[k] === 0 ? (d === 0 ? 0 : Number.POSITIVE_INFINITY) : d / Math.abs(c[k]));
  }
  return worst;
}

/** Predicted seconds of a phase on a GPU: the roofline floor, the dispatches and the readbacks. */
export function predictedS(p: PhaseCount, gpu: NamedGpu, o = OVERHEADS): number {
  return p.floorS[gpu.id] + (p.dispatches * o.dispatchUs) / 1e6 + (p.readbacks * o.readbackMs) / 1e3;
}

function sumPhases(ps: PhaseCount[]): PhaseCount {
  const out: PhaseCount = {
    dispatches: 0,
    flops: 0,
    bytes: 0,
    submits: 0,
    readbacks: 0,
    floorS: {},
    computeBoundShare: {},
  };
  const compute: Record<string, number> = {};
  for (const p of ps) {
    out.dispatches += p.dispatches;
    out.flops += p.flops;
    out.bytes += p.bytes;
    out.submits += p.submits;
    out.readbacks += p.readbacks;
    for (const [id, s] of Object.entries(p.floorS)) {
      out.floorS[id] = (out.floorS[id] ?? 0) + s;
      compute[id] = (compute[id] ?? 0) + s * (p.computeBoundShare[id] ?? 0);
    }
  }
  for (const id of Object.keys(out.floorS))
    out.computeBoundShare[id] = out.floorS[id] > 0 ? compute[id] / out.floorS[id] : 0;
  return out;
}

const fmt = (x: number, digits = 3) => (x === 0 ? "0" : x >= 100 ? x.toFixed(0) : x.toPrecision(digits));
const ms = (s: number) => (s >= 1 ? `${s.toFixed(2)} s` : `${(s * 1e3).toPrecision(3)} ms`);

/** The markdown of a counts report: one table per model at its real depth, and the linearity check. */
export function renderCounts(file: string, r: CountsReport): string {
  const lines = [
    `Generated from \`${file}\` by \`npm run bench:doc\`; do not edit by hand. Counted ${r.date.slice(0, 10)} by \`npm run bench:counts\` ` +
      `on ${r.adapter} under the \`${r.plan}\` plan (${r.planWhy}). Predicted = Σ per dispatch max(FLOPs / peak, bytes / bandwidth) ` +
      `+ ${r.overheads.dispatchUs} µs a dispatch + ${r.overheads.readbackMs} ms a readback; "compute-bound" is the share of the ` +
      "floor in dispatches whose FLOPs take longer than their bytes.",
    "",
    `| GPU | FP32 peak | bandwidth | figures from |`,
    `| --- | ---: | ---: | --- |`,
    ...r.gpus.map((g) => `| ${g.name} | ${g.tflops} TFLOP/s | ${g.gbs} GB/s | ${g.source} |`),
  ];
  for (const m of r.models) {
    const [a, b, c] = m.depths;
    const phases = PHASES.map((ph) => extrapolate(a, b, ph, m.layers));
    const total = sumPhases(phases);
    const err = c
      ? Math.max(...PHASES.map((ph) => linearityError(extrapolate(a, b, ph, c.layers), c.phases[ph])))
      : NaN;
    lines.push(
      "",
      `**${m.name}**, ${m.layers} layers (${m.shape}). Counted at ${m.depths.map((d) => d.layers).join(", ")} layers; ` +
        `${a.layers} and ${b.layers} predict ${c ? `${c.layers} ${err === 0 ? "exactly" : `within a relative ${err.toExponential(1)}`} on every count and floor` : "(no third depth)"}; ` +
        `the step took ${m.depths.map((d) => `${d.wallS.toFixed(0)} s`).join(", ")} on the counting adapter.`,
      "",
      `| phase | dispatches | readbacks | GFLOP | GB moved | FLOP/byte | ${r.gpus.map((g) => `${g.id} predicted (compute-bound)`).join(" | ")} |`,
      `| --- | ---: | ---: | ---: | ---: | ---: | ${r.gpus.map(() => "---:").join(" | ")} |`,
    );
    const row = (name: string, p: PhaseCount) =>
      `| ${name} | ${p.dispatches} | ${p.readbacks} | ${fmt(p.flops / 1e9)} | ${fmt(p.bytes / 1e9)} | ${fmt(p.flops / p.bytes, 2)} | ${r.gpus
        .map((g) => `${ms(predictedS(p, g, r.overheads))} (${(p.computeBoundShare[g.id] * 100).toFixed(0)}%)`)
        .join(" | ")} |`;
    PHASES.forEach((ph, i) => {
      lines.push(row(ph, phases[i]));
    });
    lines.push(row("**step**", total));
  }
  return lines.join("\n");
}

const BEGIN = /^<!-- counts-table: (\S+) -->$/;
const END = "<!-- /counts-table -->";

/** `text` with every counts table regenerated from the file its marker names. */
export function updateCountsDoc(text: string, read: (path: string) => string, docName: string): string {
  const lines = text.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    out.push(lines[i]);
    const m = BEGIN.exec(lines[i]);
    if (!m) continue;
    const end = lines.indexOf(END, i + 1);
    if (end < 0) throw new Error(`${docName}:${i + 1}: the counts table for ${m[1]} has no ${END} after it`);
    let report: CountsReport;
    try {
      report = JSON.parse(read(m[1])) as CountsReport;
    } catch (err) {
      throw new Error(`${docName}:${i + 1}: cannot read ${m[1]} (${(err as Error).message})`);
    }
    out.push(renderCounts(m[1], report), END);
    i = end;
  }
  return out.join("\n");
}
