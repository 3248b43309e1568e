// The per-kernel table the profiling scripts print (bench/profile-rl-shape.ts,
// bench/profile-decode.ts): timestamp-query dispatches (Runtime.readProfile) summed by label,
// largest first, as markdown rows: dispatches and GPU ms divided by `per` (1: totals; tokens:
// per token), and each kernel's share of the GPU time.
import type { ProfiledDispatch } from "../kernels/runtime";

export function profileTable(dispatches: ProfiledDispatch[], per = 1, unit = ""): string {
  const by = new Map<string, { ns: number; n: number }>();
  for (const d of dispatches) {
    const e = by.get(d.label) ?? { ns: 0, n: 0 };
    e.ns += d.ns;
    e.n++;
    by.set(d.label, e);
  }
  const total = dispatches.reduce((a, d) => a + d.ns, 0);
  const lines = [`| kernel | dispatches${unit} | GPU ms${unit} | share |`, "|---|---:|---:|---:|"];
  for (const [label, e] of [...by].sort((a, b) => b[1].ns - a[1].ns))
    lines.push(
      `| ${label} | ${+(e.n / per).toFixed(1)} | ${(e.ns / 1e6 / per).toFixed(per === 1 ? 0 : 1)} | ${((100 * e.ns) / total).toFixed(1)}% |`,
    );
  return lines.join("\n");
}
