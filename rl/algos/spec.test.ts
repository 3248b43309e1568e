// docs/ALGORITHMS.md is the specification of rl/algos: every registry entry has a section that
// names it on its `Registry:` line and cites its source on a `Paper:` line, and every
// "ALGORITHMS §N" reference in the tracked files names a section that exists.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { listRegistries } from "./registry.ts";

const SPEC = readFileSync("docs/ALGORITHMS.md", "utf8");

interface Section {
  number: string;
  title: string;
  body: string;
}

/** The page's numbered sections ("## 8. ..." and "### 8.1 ..."), each with its own text. */
function specSections(text: string): Section[] {
  const out: Section[] = [];
  for (const line of text.split("\n")) {
    const h = /^#{2,3} (\d+(?:\.\d+)?)\.? (.*)$/.exec(line);
    if (h) out.push({ number: h[1], title: h[2], body: "" });
    else if (out.length > 0) out[out.length - 1].body += `${line}\n`;
  }
  return out;
}

/** The entries a section names on its `Registry:` line, as "registry/name". */
function sectionEntries(s: Section): string[] {
  const line = s.body.split("\n").find((l) => l.startsWith("Registry:"));
  return line ? [...line.matchAll(/`([a-z-]+\/[a-z0-9-]+)`/g)].map((m) => m[1]) : [];
}

/** Section numbers cited as "ALGORITHMS §N", "ALGORITHMS.md §N-§M", "ALGORITHMS §8.3-§8.4", "§8.4a". */
function citedSections(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(
    /ALGORITHMS(?:\.md)?(?:'s)? (§[\d.]+[a-z]?(?:(?:\s*[-,/]\s*|\s+and\s+)§?\d+(?:\.\d+)?[a-z]?)*)/g,
  ))
    for (const n of m[1].matchAll(/(\d+(?:\.\d+)?)/g)) out.push(n[1].replace(/\.$/, ""));
  return out;
}

const sections = specSections(SPEC);

describe("docs/ALGORITHMS.md", () => {
  it("has a section naming each registry entry, with its paper", () => {
    const owner = new Map<string, Section>();
    for (const s of sections) for (const e of sectionEntries(s)) owner.set(e, s);
    const missing: string[] = [];
    for (const { registry, name } of listRegistries()) {
      const s = owner.get(`${registry}/${name}`);
      if (!s) missing.push(`${registry}/${name}: no section names it`);
      else if (!/^Paper: \S.{8,}/m.test(s.body))
        missing.push(`${registry}/${name}: §${s.number} names no paper`);
    }
    expect(missing).toEqual([]);
  });

  it("names only entries that exist", () => {
    const known = new Set(listRegistries().map((e) => `${e.registry}/${e.name}`));
    const extra = sections.flatMap(sectionEntries).filter((e) => !known.has(e));
    expect(extra).toEqual([]);
  });

  it("has every section the tracked files cite", () => {
    const have = new Set(sections.map((s) => s.number));
    const files = execFileSync("git", ["ls-files"], { encoding: "utf8" })
      .split("\n")
      .filter((f) => /\.(ts|tsx|mjs|md|py|json|wgsl)$/.test(f) && !f.startsWith("docs/experiments/"));
    const bad: string[] = [];
    for (const f of files) {
      let text: string;
      try {
        text = readFileSync(f, "utf8");
      } catch {
        continue; // listed but not in this checkout (a deletion not yet committed)
      }
      for (const n of citedSections(text)) if (!have.has(n)) bad.push(`${f}: ALGORITHMS §${n}`);
    }
    expect(bad).toEqual([]);
  });

  it("reads citations and sections as written", () => {
    expect(citedSections("see ALGORITHMS.md §8.3-§8.4 and ALGORITHMS §1-§6, ALGORITHMS §8.4a")).toEqual([
      "8.3",
      "8.4",
      "1",
      "6",
      "8.4",
    ]);
    expect(citedSections(`ALGORITHMS ${"§"}99`)).toEqual(["99"]); // built so this file cites nothing
    const s = specSections("## 2. GRPO\nRegistry: `advantage/grpo`, `kl/k3`\n### 2.1 More\ntext\n");
    expect(s.map((x) => x.number)).toEqual(["2", "2.1"]);
    expect(sectionEntries(s[0])).toEqual(["advantage/grpo", "kl/k3"]);
  });
});
