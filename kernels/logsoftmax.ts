// The loss head: fused log-softmax over the vocabulary giving per-token log-prob of the target,
// entropy, and the gradient of sum_t (wlp[t]*logp_t + went[t]*H_t) w.r.t. the logits. The RL
// losses compute wlp/went per token on the CPU (SFT cross-entropy: wlp = -1/N, went = 0).
// WGSL in logsoftmax.wgsl; reference logSoftmaxRef; tested by head.gpu.test.ts.
import src from "./logsoftmax.wgsl?raw";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";

/**
 * logp, ent (N); dlogits (N,V) is WRITTEN, not accumulated (it is where backward starts), and may
 * not overlap logits. targets int32 (N), < 0 = ignore; wlp, went (N). invTemp = 1/temperature:
 * log-probs are of softmax(logits/temperature), as the sampler drew them.
 */
export function logSoftmax(
  rt: Runtime,
  rec: Recorder,
  logp: View,
  ent: View,
  dlogits: View,
  logits: View,
  targets: View,
  wlp: View,
  went: View,
  N: number,
  V: number,
  invTemp = 1,
) {
  const u = rt.uniform(
    packUniform([
      ["u32", N],
      ["u32", V],
      ["f32", invTemp],
    ]),
  );
  rt.dispatch(
    rec,
    rt.pipeline(src, "main", { WG: rt.rowWorkgroup(V, 256) }),
    [logp, ent, dlogits, logits, targets, wlp, went, u],
    [N],
  );
}
