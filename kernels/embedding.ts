// Token + learned position embedding and its deterministic backward (no atomics), for token
// tables larger than one binding (Qwen2.5-0.5B's is 545 MB): the table is bound in slices of
// rows, one dispatch each. tokens: int32 (N), id < 0 = padding (zero row, no gradient); pos:
// uint32 (N), each token's own position. The backward groups the batch's rows by key on the host
// (the tokens are uploaded from there anyway), so it costs O(N*C), not O(V*C*N).
// WGSL in embedding.wgsl; references embeddingForwardRef / embeddingBackwardRef in reference.ts.
// Tested by ops.gpu.test.ts (at a lowered binding limit too).
import src from "./embedding.wgsl?raw";
import { FLOAT_ALIGN, packUniform, type Recorder, type Runtime, subview, type View } from "./runtime";

const WG = 64;

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/**
 * Rows of a (rows, C) table bound per dispatch: as many as one binding holds, a multiple of
 * 64/gcd(C,64) so every slice starts 256-byte aligned (all rows when the table fits).
 */
export function tableSliceRows(rt: Runtime, rows: number, C: number): number {
  const fit = Math.floor(rt.bindingFloats / C);
  if (fit >= rows) return rows;
  const unit = FLOAT_ALIGN / gcd(C, FLOAT_ALIGN);
  const r = Math.floor(fit / unit) * unit;
  if (r === 0)
    throw new Error(
      `a table row of ${C} floats does not fit the binding limit of ${rt.maxBindingBytes} bytes`,
    );
  return r;
}

/** The batch's rows grouped by key: keys ascending, the rows of keys[k] at order[starts[k] .. starts[k+1]). */
export interface RowGroups {
  keys: Int32Array;
  starts: Uint32Array;
  order: Uint32Array;
}

/** Groups rows n < N by keys[n], skipping rows where skip(n) (padding tokens). */
export function groupRows(keys: ArrayLike<number>, N: number, skip?: (n: number) => boolean): RowGroups {
  const rows: number[] = [];
  for (let n = 0; n < N; n++) if (!skip?.(n)) rows.push(n);
  rows.sort((a, b) => keys[a] - keys[b] || a - b);
  const uniq: number[] = [];
  const starts: number[] = [];
  rows.forEach((n, i) => {
    if (i === 0 || keys[n] !== keys[rows[i - 1]]) {
      uniq.push(keys[n]);
      starts.push(i);
    }
  });
  starts.push(rows.length);
  return { keys: Int32Array.from(uniq), starts: Uint32Array.from(starts), order: Uint32Array.from(rows) };
}

/** RowGroups uploaded: the three arrays as views, and the host copy the dispatches slice by. */
export interface RowGroupViews {
  host: RowGroups;
  keys: View;
  starts: View;
  order: View;
}

/** out (N,C) = wte[tokens] (V,C) (+ wpe[pos] (maxT,C) when wpe is given). */
export function embeddingForward(
  rt: Runtime,
  rec: Recorder,
  out: View,
  tokens: View,
  pos: View,
  wte: View,
  wpe: View | null,
  N: number,
  C: number,
) {
  const V = wte.size / 4 / C;
  const rows = tableSliceRows(rt, V, C);
  const pipeline = rt.pipeline(src, "forward", { WG, HAS_WPE: wpe ? 1 : 0 });
  for (let r0 = 0; r0 < V; r0 += rows) {
    const n = Math.min(rows, V - r0);
    const u = rt.uniform(
      packUniform([
        ["u32", N],
        ["u32", C],
        ["u32", r0],
        ["u32", n],
        ["u32", 0],
        ["u32", 0],
      ]),
    );
    const bindings = [out, tokens, pos, subview(wte, r0 * C, n * C), wpe ?? rt.dummy, u];
    // the rows looked up and written (not the table bound), each slice its share
    const share = n / V;
    rt.dispatch(rec, pipeline, bindings, [Math.ceil((N * C) / WG)], {
      flops: wpe ? N * C * share : 0,
      bytes: share * 4 * N * (C * (wpe ? 3 : 2) + 2),
    });
  }
}

/** dtable (rows,C) += dout (N,C) summed per key of `groups` (token ids, or positions for wpe). */
export function embeddingBackward(
  rt: Runtime,
  rec: Recorder,
  dtable: View,
  dout: View,
  groups: RowGroupViews,
  C: number,
) {
  const V = dtable.size / 4 / C;
  const rows = tableSliceRows(rt, V, C);
  const keys = groups.host.keys;
  const pipeline = rt.pipeline(src, "backward", { WG });
  let k0 = 0;
  for (let r0 = 0; r0 < V && k0 < keys.length; r0 += rows) {
    const n = Math.min(rows, V - r0);
    let k1 = k0;
    while (k1 < keys.length && keys[k1] < r0 + n) k1++;
    if (k1 === k0) continue;
    const u = rt.uniform(
      packUniform([
        ["u32", 0],
        ["u32", C],
        ["u32", r0],
        ["u32", n],
        ["u32", k0],
        ["u32", k1 - k0],
      ]),
    );
    const bindings = [subview(dtable, r0 * C, n * C), groups.keys, groups.starts, dout, groups.order, u];
    // the rows it adds into (read and written) and the dout rows, their share (not the table bound)
    const share = n / V;
    rt.dispatch(rec, pipeline, bindings, [Math.ceil(((k1 - k0) * C) / WG)], {
      flops: (share * dout.size) / 4,
      bytes: 8 * (k1 - k0) * C + share * dout.size,
    });
    k0 = k1;
  }
}
