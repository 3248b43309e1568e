// `npm run bench -- peers`: the lab side by side with what a person without a cluster would use
// instead, on this machine, sides interleaved rep by rep, both pinned to 2 threads (PyTorch's
// torch.set_num_threads(2); lavapipe's LP_NUM_THREADS=2, set before Dawn loads it).
//  - torch_smollm2_train_step / torch_smollm2_decode_b1 / _b8: PyTorch eager (the engines venv's
//    torch and transformers, bench/peers/torch_eager.py) at SmolLM2-135M's shape with the lab's
//    own random weights written as a Hugging Face folder, so both sides score the same batch: the
//    row's note gives both losses before training. Train step tokens/s at 1 x 64 (the lab's
//    GpuModel train step: forwardScore, backward, clipped AdamW; PyTorch the same step), KV decode
//    tokens/s at batch 1 and 8 (a 4-token prompt, one decode, then N timed).
//  - trl_rl_step_lab_llama(_cpu): the lab-made Llama's RL step against TRL's GRPOTrainer (bench/peers-trl.ts).
//  - tjs_lab_llama_decode_b1: its KV decode against transformers.js in one Chromium page (bench/peers-tjs.ts).
// ours = the lab on WebGPU (Dawn on lavapipe; Chromium's SwiftShader for the transformers.js row),
// baseline = the peer; ratio > 1: the lab is faster.
// Needs the engines venv (`npm run engines:setup`) and transformers.js (`npm run peers:setup`);
// without them the group fails naming them.
// Standalone: npx tsx --import ./cli/raw-loader.mjs bench/peers.ts [--quick] [--profile] [--no-trl] [--no-tjs]
// (--profile: then one more train step on each side, profiled: the lab's kernels by GPU time from
// timestamp queries, PyTorch's ops by CPU time from torch.profiler; what docs/PERFORMANCE.md's
// explanation of the PyTorch rows is read from).
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { enginesVenv, enginesVenvProblem } from "../export/engines/venv";
import { createGpu, ENGINE_FEATURES } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import { Runtime } from "../kernels/runtime";
import type { ScoreBatch } from "../model/api";
import { GpuModel } from "../model/gpu";
import { hfModelConfig } from "../model/hf/config";
import { SMOLLM2_135M } from "../model/hf/configs";
import { hfTensors } from "../model/hf/read";
import { writeSafetensors } from "../model/hf/write";
import { seededTokens as tokensOf, trainStepOf } from "./bigmodel";
import { peersWebProblem, tjsRows } from "./peers-tjs";
import { trlRows } from "./peers-trl";
import { profileTable } from "./profile-table";
import { type BenchRow, makeRow } from "./report";

const THREADS = 2;
const HERE = dirname(fileURLToPath(import.meta.url));
const secs = (t0: number) => (performance.now() - t0) / 1000;
const seededTokens = (n: number, V: number, seed: number) => Array.from(tokensOf(n, V, seed));

/** The PyTorch line server (bench/peers/torch_eager.py): one JSON request, one JSON answer. */
class TorchPeer {
  private lines: AsyncIterator<string>;
  private constructor(private proc: ChildProcessWithoutNullStreams) {
    this.lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  }
  static async start(modelDir: string): Promise<{ peer: TorchPeer; hello: Record<string, unknown> }> {
    const python = join(enginesVenv(), "bin", "python");
    const proc = spawn(
      python,
      [join(HERE, "peers", "torch_eager.py"), "--model", modelDir, "--threads", `${THREADS}`],
      {
        env: { ...process.env, OMP_NUM_THREADS: `${THREADS}`, MKL_NUM_THREADS: `${THREADS}` },
      },
    );
    let stderr = "";
    proc.stderr.on("data", (d) => {
      stderr = (stderr + d).slice(-4000);
    });
    const peer = new TorchPeer(proc);
    const first = await peer.lines.next();
    if (first.done) throw new Error(`bench/peers/torch_eager.py exited before answering:\n${stderr}`);
    return { peer, hello: JSON.parse(first.value) };
  }
  async ask<T>(req: Record<string, unknown>): Promise<T> {
    this.proc.stdin.write(`${JSON.stringify(req)}\n`);
    const r = await this.lines.next();
    if (r.done) throw new Error("bench/peers/torch_eager.py exited mid-run");
    const out = JSON.parse(r.value);
    if (out.error) throw new Error(`bench/peers/torch_eager.py: ${out.error}`);
    return out as T;
  }
  close() {
    this.proc.stdin.end();
    this.proc.kill();
  }
}

/** The lab's random weights at SmolLM2-135M's shape, as a Hugging Face folder PyTorch loads. */
function writeHfFolder(model: GpuModel, weights: Float32Array): string {
  const dir = mkdtempSync(join(tmpdir(), "lab-peers-smollm2-"));
  const tensors = hfTensors(model.config).map((t) => ({
    name: t.name,
    shape: t.shape,
    data: weights.subarray(t.offset, t.offset + t.size),
  }));
  writeFileSync(join(dir, "model.safetensors"), writeSafetensors(tensors));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ ...SMOLLM2_135M, torch_dtype: "float32" }));
  return dir;
}

/** Seconds of `n` lab KV decodes at batch `rows` after a 4-token prompt and one decode. */
async function labDecode(model: GpuModel, rows: number, n: number, V: number): Promise<number> {
  const gen = model.startGeneration({ temperature: 0, seed: 3 });
  await gen.prefill(Array.from({ length: rows }, (_, r) => seededTokens(4, V, 40 + r)));
  const all = new Array(rows).fill(true);
  await gen.decode(all);
  const t = performance.now();
  for (let i = 0; i < n; i++) await gen.decode(all);
  const s = secs(t);
  gen.finish();
  return s;
}

/** One more train step on each side, profiled: the two tables, for the explanation of the rows. */
async function profileTrain(
  rt: Runtime,
  model: GpuModel,
  peer: TorchPeer,
  batch: ScoreBatch,
  tokens: number[],
  targets: number[],
) {
  rt.startProfile();
  const t = performance.now();
  await trainStepOf(model, batch)();
  const wall = secs(t);
  const dispatches = await rt.readProfile();
  const gpuMs = dispatches.reduce((a, d) => a + d.ns, 0) / 1e6;
  console.log(
    `lab train step (profiled): wall ${wall.toFixed(2)} s, GPU ${(gpuMs / 1000).toFixed(2)} s over ${dispatches.length} dispatches`,
  );
  console.log(profileTable(dispatches));
  console.log((await peer.ask<{ table: string }>({ op: "profile_train", tokens, targets })).table);
}

export async function runPeersBench(
  opts: { quick?: boolean; profile?: boolean; skipTrl?: boolean; skipTjs?: boolean } = {},
): Promise<{ rows: BenchRow[]; adapterNote: string }> {
  const problem = enginesVenvProblem();
  if (problem) throw new Error(`the peers group needs the engines venv: ${problem}`);
  const web = opts.skipTjs ? null : peersWebProblem();
  if (web) throw new Error(`the peers group needs transformers.js: ${web}`);
  process.env.LP_NUM_THREADS ??= `${THREADS}`; // read when Dawn loads lavapipe, below
  const reps = 3;
  const features = opts.profile ? [...ENGINE_FEATURES, "timestamp-query" as const] : [...ENGINE_FEATURES];
  const gpu = await createGpu(await nodeGpu(), { optionalFeatures: features });
  const { device, adapter } = gpu;
  const adapterNote = `Node/Dawn adapter: ${adapter.description || adapter.vendor}${adapter.isFallback ? " (software)" : ""}, LP_NUM_THREADS=${process.env.LP_NUM_THREADS}`;
  const rt = new Runtime(device);
  const c = hfModelConfig(SMOLLM2_135M, "SmolLM2-135M config.json", { context: 256 });
  const model = new GpuModel(rt, c, undefined, 1);
  const dir = writeHfFolder(model, await model.getWeights());
  const { peer, hello } = await TorchPeer.start(dir);
  const peerNote = `PyTorch ${hello.torch} eager on the CPU, ${hello.threads} threads, transformers ${hello.transformers} (${hello.params} parameters)`;
  const shape =
    "SmolLM2-135M's shape (d576 L30, 9 heads of 64 over 3 KV heads, vocab 49152, tied), the lab's random weights on both sides";
  const rows: BenchRow[] = [];
  try {
    const T = 64;
    const tokens = seededTokens(T, c.vocab, 1);
    const targets = seededTokens(T, c.vocab, 2);
    const batch = { B: 1, T, tokens: Int32Array.from(tokens), targets: Int32Array.from(targets) };
    const torchLoss = (await peer.ask<{ loss: number }>({ op: "loss", tokens, targets })).loss;
    // warm-up (pipeline compiles; PyTorch's first backward), then interleaved reps
    const labStep = trainStepOf(model, batch);
    const labFirst = await labStep();
    await peer.ask({ op: "train", tokens, targets });
    const lab: number[] = [];
    const torch: number[] = [];
    for (let i = 0; i < reps; i++) {
      lab.push(T / (await labStep()).s);
      torch.push(T / (await peer.ask<{ s: number }>({ op: "train", tokens, targets })).s);
    }
    rows.push(
      makeRow({
        id: "torch_smollm2_train_step",
        group: "peers",
        ours: lab,
        baseline: torch,
        unit: "tokens/s",
        better: "higher",
        note: `${shape}; train step at batch 1 x ${T} (forward, mean -log p, backward, grad-norm clip 1, AdamW), ${reps} interleaved reps after a warm-up each; loss of the batch before training: lab ${labFirst.loss.toFixed(6)}, PyTorch ${torchLoss.toFixed(6)} (|diff| ${Math.abs(labFirst.loss - torchLoss).toExponential(1)}); PyTorch tokens/s ${torch.map((x) => x.toFixed(2)).join("/")}; baseline ${peerNote}; ${adapterNote}`,
      }),
    );
    if (opts.profile) await profileTrain(rt, model, peer, batch, tokens, targets);
    for (const b of [1, 8]) {
      const n = opts.quick ? 4 : 16;
      const prompts = Array.from({ length: b }, (_, r) => seededTokens(4, c.vocab, 40 + r));
      const labRates: number[] = [];
      const torchRates: number[] = [];
      await labDecode(model, b, 1, c.vocab); // warm-up
      for (let i = 0; i < reps; i++) {
        labRates.push((b * n) / (await labDecode(model, b, n, c.vocab)));
        torchRates.push((b * n) / (await peer.ask<{ s: number }>({ op: "decode", prompts, n })).s);
      }
      rows.push(
        makeRow({
          id: `torch_smollm2_decode_b${b}`,
          group: "peers",
          ours: labRates,
          baseline: torchRates,
          unit: "tokens/s",
          better: "higher",
          note: `${shape}; KV-cache decode at batch ${b}: a 4-token prompt, one decode, then ${n} timed greedy decodes, ${reps} interleaved reps; PyTorch tokens/s ${torchRates.map((x) => x.toFixed(1)).join("/")}; baseline ${peerNote}; ${adapterNote}`,
        }),
      );
    }
  } finally {
    peer.close();
    model.dispose();
    device.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
  if (!opts.skipTrl) rows.push(...(await trlRows(adapterNote)));
  if (!opts.skipTjs) rows.push(...(await tjsRows({ quick: opts.quick })));
  return { rows, adapterNote };
}

const argv1 = process.argv[1];
if (argv1 && fileURLToPath(import.meta.url) === argv1) {
  const t0 = Date.now();
  const { rows } = await runPeersBench({
    quick: process.argv.includes("--quick"),
    profile: process.argv.includes("--profile"),
    skipTrl: process.argv.includes("--no-trl"),
    skipTjs: process.argv.includes("--no-tjs"),
  });
  for (const r of rows)
    console.log(
      `${r.id.padEnd(30)} lab ${r.ours.toPrecision(4)} vs ${r.baseline.toPrecision(4)} ${r.unit}  ratio ${r.ratio.toFixed(2)} spread ${(r.spread * 100).toFixed(0)}%  (${r.note})`,
    );
  console.log(`took ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  process.exit(0);
}
