// Pure arithmetic of the model benchmark page (bench/model-page.ts), kept apart so that
// bench/run.test.ts can test it in Node without WebGPU or tfjs.

/** FLOPs of one train step (forward + backward = 3x forward) of the GPT; causal attention counted at T/2. */
export function trainStepFlops(
  c: { layers: number; dModel: number; vocab: number },
  B: number,
  T: number,
): number {
  const C = c.dModel;
  const matmulParams = c.layers * 12 * C * C + C * c.vocab; // qkv, proj, fc, fcproj; tied head
  const attnPerToken = c.layers * 2 * 2 * (T / 2) * C; // QK^T and AV over half the prefix on average
  return 3 * B * T * (2 * matmulParams + attnPerToken);
}

/** Piecewise-linear through (xs, ys) (xs ascending), extended linearly past the last point and
 *  towards the first (never below 0); one point: proportional through the origin. */
export function interpolate(xs: number[], ys: number[], x: number): number {
  if (xs.length === 1) return (ys[0] * x) / xs[0];
  if (x < xs[0]) return Math.max(0, ys[0] + ((ys[1] - ys[0]) * (x - xs[0])) / (xs[1] - xs[0]));
  let i = 0;
  while (i < xs.length - 2 && x > xs[i + 1]) i++;
  return ys[i] + ((ys[i + 1] - ys[i]) * (x - xs[i])) / (xs[i + 1] - xs[i]);
}
