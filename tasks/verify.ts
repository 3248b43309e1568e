// Answer checks shared by the tasks: numeric answers with a tolerance, normalised exact
// match, and tool-call comparison (canonical JSON, multiset equality as Tool-N1 does).
// Tested by tasks/verify.test.ts.

import type { CallRecord, VerifyResult } from "./types.ts";

/**
 * The single number in an answer such as "226", "$1,234", "12.5 km" or "-3"; null when there
 * is no number or more than one (an answer listing candidates is not an answer).
 */
export function parseNumber(text: string): number | null {
  const cleaned = text.replace(/(\d),(?=\d{3}\b)/g, "$1");
  const matches = cleaned.match(/-?\d+(?:\.\d+)?/g);
  if (matches === null || matches.length !== 1) return null;
  const v = Number(matches[0]);
  return Number.isFinite(v) ? v : null;
}

/** The project's one tolerance rule: |ref - got| <= atol + rtol * |ref|. */
export function verifyNumeric(reference: string, answer: string | null, atol = 1e-9, rtol = 0): VerifyResult {
  if (answer === null) return { correct: false, score: 0, detail: { reason: "no answer" } };
  const ref = Number(reference);
  const got = parseNumber(answer);
  if (got === null) return { correct: false, score: 0, detail: { reason: "no single number", answer } };
  const correct = Math.abs(ref - got) <= atol + rtol * Math.abs(ref);
  return { correct, score: correct ? 1 : 0, detail: { parsed: got } };
}

export function normalizeText(text: string): string {
  return text
    .trim()
    .replace(/^["'`]+|["'`.]+$/g, "")
    .replace(/\s+/g, " ")
    .toLowerCase();
}

export function verifyExact(reference: string, answer: string | null): VerifyResult {
  if (answer === null) return { correct: false, score: 0, detail: { reason: "no answer" } };
  const correct = normalizeText(reference) === normalizeText(answer);
  return { correct, score: correct ? 1 : 0 };
}

/** JSON with object keys sorted recursively, so argument order does not matter. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Tool-N1's match: the same multiset of (name, canonical arguments), order ignored. */
export function callsMatch(gold: CallRecord[], predicted: CallRecord[]): boolean {
  if (gold.length !== predicted.length) return false;
  const key = (c: CallRecord) => `${c.name}\u0000${canonicalJson(c.arguments ?? {})}`;
  const a = gold.map(key).sort();
  const b = predicted.map(key).sort();
  return a.every((k, i) => k === b[i]);
}
