// The one tolerance rule of STYLE.md for numeric tests: |ref - got| <= atol + rtol*|ref|.
// On failure the error names the worst element and the first mismatching pairs.
// Used by the model tests (CPU and GPU).

export function assertClose(
  label: string,
  got: ArrayLike<number>,
  ref: ArrayLike<number>,
  atol: number,
  rtol: number,
): { maxDiff: number } {
  if (got.length !== ref.length) throw new Error(`${label}: length ${got.length} != expected ${ref.length}`);
  let maxDiff = 0;
  let worst = -1;
  const bad: string[] = [];
  for (let i = 0; i < ref.length; i++) {
    const d = Math.abs(got[i] - ref[i]);
    const ok = d <= atol + rtol * Math.abs(ref[i]);
    if (!(d <= maxDiff) || Number.isNaN(d)) {
      maxDiff = Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
      worst = i;
    }
    if (!ok && bad.length < 5) bad.push(`[${i}] got ${got[i]} ref ${ref[i]}`);
  }
  if (bad.length > 0) {
    throw new Error(
      `${label}: max |diff| ${maxDiff} at [${worst}] (atol ${atol}, rtol ${rtol}); first mismatches: ${bad.join(", ")}`,
    );
  }
  return { maxDiff };
}
