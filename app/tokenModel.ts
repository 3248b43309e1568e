// The trajectory inspector's model, as pure functions (tested by app/tokenModel.test.ts):
// each token's provenance (prompt / trained policy token / inserted tool output / padding)
// from the sample's mask, the text shown for it (␣ for spaces, ¶ for newlines, → for tabs),
// the heat colour of the selected per-token value (signed values on a symmetric diverging
// scale, untrained tokens kept out of the heatmap), and GRPO groups side by side.
// A token's text is the piece the worker sent with the sample (byte-level BPE pieces already
// decoded there): the page loads no tokenizer. A record without pieces shows ids as ⟨id⟩.
import type { SampleRecord } from "../workers/api";

export type TokenRole = "prompt" | "policy" | "tool" | "pad";
export type Overlay = "none" | "logprob" | "entropy" | "advantage" | "logratio";

export interface InspectorToken {
  /** Index in the response (tokens); -1 for prompt tokens. */
  index: number;
  id: number;
  text: string;
  display: string;
  role: TokenRole;
  /** 1 trained (policy), 0 not trained (prompt, tool output, padding). */
  mask: 0 | 1;
  postTool: boolean;
  logprob: number | null;
  entropy: number | null;
  advantage: number | null;
  /** log of the rollout importance ratio, old − sampler log-prob (rl/update/sampler-mismatch.ts); 0 = agree. */
  logratio: number | null;
  /** Picked by a token-selection rule (Clip-Cov, KL-Cov, top-entropy quantile). */
  selected: boolean;
  /** Which tool call's response this token is part of (responseStart..responseEnd), or -1. */
  toolCall: number;
}

export function displayText(text: string): string {
  return text.replace(/ /g, "␣").replace(/\t/g, "→").replace(/\r/g, "␍").replace(/\n/g, "¶\n");
}

function pieceOf(pieces: readonly string[] | undefined, i: number, id: number): string {
  const p = pieces?.[i];
  return typeof p === "string" ? p : `⟨${id}⟩`;
}

function at(xs: readonly number[] | undefined, i: number): number | null {
  const v = xs?.[i];
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/** Prompt tokens, then the response tokens with their role from the mask. */
export function inspectorTokens(s: SampleRecord): InspectorToken[] {
  const isPad = (id: number) => s.padId !== undefined && id === s.padId;
  const out: InspectorToken[] = s.promptTokens.map((id, i) => {
    const text = pieceOf(s.promptPieces, i, id);
    return {
      index: -1,
      id,
      text,
      display: displayText(text),
      role: isPad(id) ? "pad" : "prompt",
      mask: 0,
      postTool: false,
      logprob: null,
      entropy: null,
      advantage: null,
      logratio: null,
      selected: false,
      toolCall: -1,
    };
  });
  s.tokens.forEach((id, i) => {
    const trained = s.mask[i] === 1;
    const role: TokenRole = isPad(id) ? "pad" : trained ? "policy" : "tool";
    const call = s.toolCalls.findIndex((c) => i >= c.responseStart && i < c.responseEnd);
    const text = pieceOf(s.pieces, i, id);
    out.push({
      index: i,
      id,
      text,
      display: displayText(text),
      role,
      mask: trained && !isPad(id) ? 1 : 0,
      postTool: s.postTool[i] === 1,
      // Inserted tokens were not sampled: their per-token numbers mean nothing.
      logprob: role === "policy" ? at(s.logprobs, i) : null,
      entropy: role === "policy" ? at(s.entropy, i) : null,
      advantage: role === "policy" ? at(s.advantages, i) : null,
      logratio:
        role === "policy" && at(s.ratio, i) !== null && s.ratio![i] > 0 ? Math.log(s.ratio![i]) : null,
      selected: role === "policy" && s.selected?.[i] === 1,
      toolCall: call,
    });
  });
  return out;
}

/** The value an overlay reads from a token; untrained tokens have none (kept out of heatmaps). */
export function overlayValue(t: InspectorToken, overlay: Overlay): number | null {
  if (overlay === "none" || t.mask === 0) return null;
  return t[overlay];
}

export interface OverlayScale {
  overlay: Overlay;
  signed: boolean;
  min: number;
  max: number;
}

/**
 * The colour scale over a set of samples: advantage and the log importance ratio are signed
 * and symmetric, max(|min|,|max|).
 */
export function overlayScale(samples: readonly SampleRecord[], overlay: Overlay): OverlayScale {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const s of samples) {
    for (const t of inspectorTokens(s)) {
      const v = overlayValue(t, overlay);
      if (v === null) continue;
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
  }
  const signed = overlay === "advantage" || overlay === "logratio";
  if (!Number.isFinite(lo)) return { overlay, signed, min: 0, max: 1 };
  if (signed) {
    const m = Math.max(Math.abs(lo), Math.abs(hi)) || 1;
    return { overlay, signed: true, min: -m, max: m };
  }
  if (overlay === "logprob") return { overlay, signed: false, min: Math.min(lo, -1e-6), max: 0 };
  return { overlay, signed: false, min: 0, max: hi > 0 ? hi : 1 };
}

export interface TokenColour {
  background: string;
  /** White text on dark backgrounds (brightness < 0.6). */
  color: string;
  /** 0..1 of the scale, for tests and titles. */
  t: number;
}

// Colour-blind-safe diverging ends (blue / orange, as in ColorBrewer PuOr/RdBu-safe pairs).
const NEG: [number, number, number] = [33, 102, 172];
const POS: [number, number, number] = [230, 97, 1];
const WHITE: [number, number, number] = [255, 255, 255];

function mix(a: readonly number[], b: readonly number[], t: number): [number, number, number] {
  return [0, 1, 2].map((k) => Math.round(a[k] + (b[k] - a[k]) * t)) as [number, number, number];
}

/**
 * The heat colour of a value: signed scales are white at zero, blue below, orange above;
 * unsigned ones go from white (low) to blue (high); log-prob is shaded so that unlikely
 * (very negative) tokens are dark. null when there is no value (no heat).
 */
export function tokenColour(value: number | null, scale: OverlayScale): TokenColour | null {
  if (value === null) return null;
  let rgb: [number, number, number];
  let t: number;
  if (scale.signed) {
    const m = Math.max(Math.abs(scale.min), Math.abs(scale.max)) || 1;
    t = Math.max(-1, Math.min(1, value / m));
    rgb = mix(WHITE, t < 0 ? NEG : POS, Math.abs(t));
  } else {
    const span = scale.max - scale.min || 1;
    t = Math.max(0, Math.min(1, (value - scale.min) / span));
    // log-prob: high (near 0) is white, low is dark; entropy: high is dark.
    const dark = scale.overlay === "logprob" ? 1 - t : t;
    rgb = mix(WHITE, NEG, dark);
  }
  const brightness = (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]) / 255;
  return { background: `rgb(${rgb[0]}, ${rgb[1]}, ${rgb[2]})`, color: brightness < 0.6 ? "#fff" : "#111", t };
}

export interface SampleGroup {
  groupId: string;
  samples: SampleRecord[];
  /** Every reward equal: no learning signal from this group. */
  zeroStd: boolean;
  filter: string;
}

/** Samples grouped by prompt (GRPO group), in order of first appearance. */
export function groupSamples(samples: readonly SampleRecord[]): SampleGroup[] {
  const groups = new Map<string, SampleRecord[]>();
  for (const s of samples) {
    const g = groups.get(s.groupId);
    if (g) g.push(s);
    else groups.set(s.groupId, [s]);
  }
  return [...groups].map(([groupId, ss]) => ({
    groupId,
    samples: ss,
    zeroStd: ss.length > 1 && ss.every((s) => s.reward === ss[0].reward),
    filter: ss[0].filter,
  }));
}

/** The advantage a trajectory got: the mean over its trained tokens (GRPO: all equal). */
export function sampleAdvantage(s: SampleRecord): number | null {
  if (s.text?.advantage !== undefined) return s.text.advantage;
  let sum = 0;
  let n = 0;
  s.advantages.forEach((a, i) => {
    if (s.mask[i] === 1 && Number.isFinite(a)) {
      sum += a;
      n++;
    }
  });
  return n > 0 ? sum / n : null;
}

/** Inspector filters: failed tool calls, truncated completions, extreme advantages. */
export type SampleFilter = "all" | "failed-tools" | "truncated" | "extreme-adv";

export function matchesFilter(s: SampleRecord, f: SampleFilter, advScale = 1): boolean {
  if (f === "failed-tools") return s.toolCalls.some((c) => !c.ok);
  if (f === "truncated") return s.finish !== "stop";
  if (f === "extreme-adv") {
    const a = sampleAdvantage(s);
    return a !== null && Math.abs(a) >= 0.75 * advScale;
  }
  return true;
}
