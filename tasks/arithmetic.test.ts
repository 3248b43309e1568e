// Tests for tasks/arithmetic.ts: seeded sampling, the eval split, the problem mix, the
// verifier, and the SFT demo mix and transcripts of ALGORITHMS §14.
import { describe, expect, it } from "vitest";
import {
  canonicalExpr,
  inlineTranscript,
  makeArithmeticTask,
  miscopyOperand,
  oneOpChain,
  perturbNumber,
  toolDemoMessages,
} from "./arithmetic.ts";
import { calculator, ONE_OP_ERROR, oneOpCalculator } from "./calc.ts";
import { Rng } from "./rng.ts";
import { isEvalKey, splitSide } from "./split.ts";

const task = makeArithmeticTask();

describe("arithmetic problems", () => {
  it("are deterministic per seed", () => {
    expect(task.sample(new Rng(5), 50)).toEqual(task.sample(new Rng(5), 50));
    expect(task.sample(new Rng(5), 50)).not.toEqual(task.sample(new Rng(6), 50));
    expect(task.evalSet(40)).toEqual(task.evalSet(40));
  });

  it("follow the demo mix: 50% hard (70% abc*de, 30% (ab+cd)*ef), 50% easy", () => {
    const ps = task.sample(new Rng(1), 4000);
    const hard = ps.filter((p) => p.bucket === "hard");
    expect(Math.abs(hard.length / ps.length - 0.5)).toBeLessThan(0.03);
    const mul = hard.filter((p) => /^\d{3}\*\d{2}$/.test(String(p.meta.expr)));
    const sum = hard.filter((p) => /^\(\d{2}\+\d{2}\)\*\d{2}$/.test(String(p.meta.expr)));
    expect(mul.length + sum.length).toBe(hard.length);
    expect(Math.abs(mul.length / hard.length - 0.7)).toBeLessThan(0.04);
    for (const p of ps.filter((q) => q.bucket === "easy")) {
      expect(String(p.meta.expr)).toMatch(/^([1-9]\*[1-9]|([1-9]|1\d|20)\+([1-9]|1\d|20))$/);
    }
    for (const p of ps.slice(0, 200)) {
      expect(p.messages).toEqual([{ role: "user", content: `What is ${p.meta.expr}?` }]);
      expect(p.answer).toBe(calculator(String(p.meta.expr)).output);
    }
  });

  it("keep the eval set disjoint from training samples (split version 1, raw keys)", () => {
    const v1 = makeArithmeticTask({ splitVersion: 1 });
    const evalKeys = new Set(v1.evalSet(100).map((p) => p.id));
    expect(evalKeys.size).toBeGreaterThan(60);
    const train = v1.sample(new Rng(11), 5000);
    for (const p of train) expect(evalKeys.has(p.id)).toBe(false);
    for (const p of train.slice(0, 500)) expect(isEvalKey("arithmetic", String(p.meta.expr))).toBe(false);
    // The eval mix follows the training mix (50% hard).
    const ev = v1.evalSet(400);
    expect(Math.abs(ev.filter((p) => p.bucket === "hard").length / 400 - 0.5)).toBeLessThan(0.07);
    expect(new Set(ev.filter((p) => p.bucket === "hard").map((p) => p.id)).size).toBeGreaterThan(190);
  });

  // The measurement behind split version 2, on quick-demo's task (mulDigits [2, 2]): version
  // 1's 100 eval items are 74 distinct problems, and 64 of those have a commutative twin whose
  // key falls on the training side (the twin can be sampled for training).
  it("split version 1 leaks commutative twins into training; version 2 does not", () => {
    const twinOf = (e: string) => {
      const m = /^(\d+)([*+])(\d+)$/.exec(e) ?? /^\((\d+)(\+)(\d+)\)\*\d+$/.exec(e);
      if (!m) return null;
      return e.startsWith("(") ? e.replace(/^\((\d+)\+(\d+)\)/, "($2+$1)") : `${m[3]}${m[2]}${m[1]}`;
    };
    const twinsOnTrain = (version: 1 | 2, fraction: number) => {
      const ev = makeArithmeticTask({ splitVersion: version, mulDigits: [2, 2] }).evalSet(100);
      const key = (e: string) => (version === 1 ? e : canonicalExpr(e));
      const distinct = [...new Set(ev.map((p) => String(p.meta.expr)))];
      const leaked = distinct.filter((e) => {
        const t = twinOf(e);
        return t !== null && t !== e && splitSide("arithmetic", key(t), fraction, version) === "train";
      });
      return { distinct: distinct.length, leaked: leaked.length };
    };
    const v1 = twinsOnTrain(1, 0.1);
    expect(v1.distinct).toBe(74);
    expect(v1.leaked).toBe(64);
    expect(twinsOnTrain(2, 0.2)).toEqual({ distinct: 100, leaked: 0 });
  });

  it("split version 2: eval and dev hold each problem once, and train, eval and dev are disjoint", () => {
    const evalSet = task.evalSet(100);
    const devSet = task.devSet?.(50) ?? [];
    const keys = (ps: { meta: { expr?: unknown } }[]) => ps.map((p) => canonicalExpr(String(p.meta.expr)));
    const ek = new Set(keys(evalSet));
    const dk = new Set(keys(devSet));
    expect(ek.size).toBe(100);
    expect(dk.size).toBe(50);
    for (const k of dk) expect(ek.has(k)).toBe(false);
    const train = keys(task.sample(new Rng(11), 5000));
    for (const k of train) expect(ek.has(k) || dk.has(k)).toBe(false);
    // Past the easy bucket's ~50 held-out problems the draws are hard: the mix stays near half.
    const easy = evalSet.filter((p) => p.bucket === "easy").length;
    expect(easy).toBe(50);
    expect(task.evalSet(300).filter((p) => p.bucket === "easy").length).toBe(50);
    expect(canonicalExpr("7*3")).toBe("3*7");
    expect(canonicalExpr("(45+12)*33")).toBe("(12+45)*33");
    expect(canonicalExpr("12-3")).toBe("12-3");
  });

  it("difficulty knobs change the shapes", () => {
    const t = makeArithmeticTask({
      hardFraction: 1,
      random: { steps: 3, digits: 2, operators: ["+", "-"], parens: false },
    });
    for (const p of t.sample(new Rng(2), 50)) {
      expect(String(p.meta.expr)).toMatch(/^\d{2}([+-]\d{2}){3}$/);
      expect(p.bucket).toBe("hard");
    }
  });
});

describe("arithmetic verifier", () => {
  const p = task.sample(new Rng(3), 1)[0];
  it("accepts the exact integer and rejects the rest", () => {
    expect(task.verify(p, p.answer)).toMatchObject({ correct: true, score: 1 });
    expect(task.verify(p, ` ${p.answer}\n`).correct).toBe(true);
    expect(task.verify(p, String(Number(p.answer) + 1)).correct).toBe(false);
    expect(task.verify(p, `${p.answer}.5`).correct).toBe(false);
    expect(task.verify(p, `${p.answer} apples`).correct).toBe(false);
    expect(task.verify(p, null)).toMatchObject({ correct: false, score: 0 });
  });
});

describe("arithmetic tool", () => {
  it("runs locally and refuses disallowed characters", () => {
    expect(task.runToolLocally?.("calculator", "347*29")).toEqual({ ok: true, output: "10063" });
    expect(task.runToolLocally?.("calculator", "347/29")).toEqual({ ok: false, output: "SyntaxError" });
    expect(task.runToolLocally?.("other", "1")).toBeUndefined();
  });
});

describe("arithmetic SFT demos", () => {
  it("render the inline transcript of ALGORITHMS §14 exactly", () => {
    const messages = [
      { role: "user" as const, content: "What is 347*29?" },
      ...toolDemoMessages("use tool", "347*29", "10063", "10063"),
    ];
    expect(inlineTranscript(messages)).toBe(
      "<|im_start|>user\nWhat is 347*29?<|im_end|>\n<|im_start|>assistant\n" +
        "<think>use tool</think><tool_call>347*29</tool_call><tool_response>10063" +
        "</tool_response><answer>10063</answer><|im_end|>",
    );
  });

  it("follow the default mix over 2000 demos", () => {
    const demos = task.sftDemos(new Rng(9), 2000);
    const share = (f: (d: (typeof demos)[number]) => boolean) => demos.filter(f).length / demos.length;
    expect(Math.abs(share((d) => d.meta.useTool === true) - 0.3)).toBeLessThan(0.035);
    expect(Math.abs(share((d) => d.meta.think === true) - 0.3)).toBeLessThan(0.035);
    expect(Math.abs(share((d) => d.bucket === "hard") - 0.5)).toBeLessThan(0.035);
    // Tool use is spread over both buckets.
    const toolHard = demos.filter((d) => d.meta.useTool && d.bucket === "hard").length;
    const toolEasy = demos.filter((d) => d.meta.useTool && d.bucket === "easy").length;
    expect(Math.abs(toolHard / (toolHard + toolEasy) - 0.5)).toBeLessThan(0.06);
    for (const d of demos) {
      const expr = String(d.meta.expr);
      const truth = calculator(expr).output;
      const a = {
        content: inlineTranscript(d.messages.slice(1)).slice(
          "<|im_start|>assistant\n".length,
          -"<|im_end|>".length,
        ),
      };
      expect(d.messages[d.messages.length - 1].role).toBe("assistant");
      expect(d.messages[0]).toEqual({ role: "user", content: `What is ${expr}?` });
      if (d.meta.useTool) {
        const think = d.meta.think ? "<think>use tool</think>" : "";
        expect(d.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
        expect(d.messages[2].content).toBe(truth);
        expect(a.content).toBe(
          `${think}<tool_call>${expr}</tool_call><tool_response>${truth}</tool_response><answer>${truth}</answer>`,
        );
        expect(d.meta.correct).toBe(true);
      } else {
        const m = /^(<think>answer directly<\/think>)?<answer>(-?\d+)<\/answer>$/.exec(a.content);
        expect(m, a.content).not.toBeNull();
        const given = m?.[2] ?? "";
        if (d.bucket === "easy") expect(given).toBe(truth);
        else {
          expect(given).not.toBe(truth);
          let diff = 0;
          if (given.length === truth.length)
            for (let i = 0; i < given.length; i++) diff += given[i] !== truth[i] ? 1 : 0;
          expect(given.length).toBe(truth.length);
          expect(diff === 1 || diff === 2).toBe(true);
        }
      }
    }
  });

  it("toolErrorRate makes tool demos that copy one operand wrong", () => {
    const demos = task.sftDemos(new Rng(4), 400, { toolRate: 1, toolErrorRate: 0.3, thinkRate: 0 });
    const errs = demos.filter((d) => d.meta.toolError);
    expect(Math.abs(errs.length / demos.length - 0.3)).toBeLessThan(0.08);
    for (const d of errs) {
      const a = inlineTranscript(d.messages.slice(1));
      const m =
        /^<\|im_start\|>assistant\n<tool_call>(.*)<\/tool_call><tool_response>(.*)<\/tool_response><answer>(.*)<\/answer><\|im_end\|>$/.exec(
          a,
        );
      expect(m).not.toBeNull();
      const [, call, resp, ans] = m ?? [];
      expect(call).not.toBe(d.meta.expr);
      expect(call.replace(/\d/g, "9")).toBe(String(d.meta.expr).replace(/\d/g, "9"));
      expect(resp).toBe(calculator(call).output);
      expect(ans).toBe(resp);
    }
  });

  it("are deterministic and use training prompts only", () => {
    expect(task.sftDemos(new Rng(1), 30)).toEqual(task.sftDemos(new Rng(1), 30));
    const evalIds = new Set(task.evalSet(100).map((p) => p.id));
    for (const d of task.sftDemos(new Rng(2), 1000))
      expect(evalIds.has(`arithmetic:${d.meta.expr}`)).toBe(false);
  });

  it("perturbNumber and miscopyOperand change 1-2 digits only", () => {
    const r = new Rng(8);
    for (let i = 0; i < 200; i++) {
      const w = perturbNumber(r, "10063");
      expect(w).not.toBe("10063");
      expect(w).toMatch(/^[1-9]\d{4}$/);
      const e = miscopyOperand(r, "(12+34)*56");
      expect(e).not.toBe("(12+34)*56");
      expect(e).toMatch(/^\([1-9]\d\+[1-9]\d\)\*[1-9]\d$/);
    }
  });
});

describe("the oneOp variant (OTC's task: a calculator that does one operation per call)", () => {
  const one = makeArithmeticTask({ oneOp: true, mulDigits: [2, 2], hardFraction: 0.75, splitVersion: 2 });

  it("leaves the default task's problems, keys and tool as they were", () => {
    const p = makeArithmeticTask().sample(new Rng(3), 50);
    expect(p.every((q) => !("minCalls" in q.meta) && (q.bucket === "easy" || q.bucket === "hard"))).toBe(
      true,
    );
    expect(makeArithmeticTask().tools[0]).not.toHaveProperty("maxOperators");
    expect(canonicalExpr("(12+34)*56")).toBe("(12+34)*56");
  });

  it("knows each problem's fewest calls: easy 0, ab*cd 1, (ab+cd)*ef 2, (ab+cd)*(ef+gh) 3", () => {
    const shapes: Record<string, RegExp> = {
      calls0: /^([1-9]\*[1-9]|([1-9]|1\d|20)\+([1-9]|1\d|20))$/,
      calls1: /^\d{2}\*\d{2}$/,
      calls2: /^\(\d{2}\+\d{2}\)\*\d{2}$/,
      calls3: /^\(\d{2}\+\d{2}\)\*\(\d{2}\+\d{2}\)$/,
    };
    const ps = one.sample(new Rng(1), 4000);
    expect(one.buckets).toEqual(["calls0", "calls1", "calls2", "calls3"]);
    for (const [bucket, shape] of Object.entries(shapes)) {
      const b = ps.filter((p) => p.bucket === bucket);
      expect(Math.abs(b.length / ps.length - 0.25)).toBeLessThan(0.03);
      for (const p of b) {
        expect(String(p.meta.expr)).toMatch(shape);
        expect(p.meta.minCalls).toBe(Number(bucket.slice(5)));
      }
    }
    for (const p of ps.filter((q) => q.bucket !== "calls0").slice(0, 300)) {
      const chain = oneOpChain(String(p.meta.expr));
      expect(chain).toHaveLength(Number(p.meta.minCalls));
      const outs = chain.map((c) => oneOpCalculator(c));
      expect(outs.every((o) => o.ok)).toBe(true);
      expect(outs[outs.length - 1].output).toBe(p.answer);
      // and the whole expression in one call is refused
      expect(p.meta.minCalls === 1 || oneOpCalculator(String(p.meta.expr)).output === ONE_OP_ERROR).toBe(
        true,
      );
    }
  });

  it("keys (ab+cd)*(ef+gh) canonically and keeps the held-out set disjoint and mixed", () => {
    expect(canonicalExpr("(34+12)*(78+56)")).toBe(canonicalExpr("(56+78)*(12+34)"));
    const ev = one.evalSet(100);
    expect(new Set(ev.map((p) => canonicalExpr(String(p.meta.expr)))).size).toBe(100);
    for (const b of one.buckets) expect(ev.filter((p) => p.bucket === b).length).toBeGreaterThan(15);
    for (const p of one.sample(new Rng(9), 3000))
      expect(splitSide("arithmetic", canonicalExpr(String(p.meta.expr)), 0.2)).toBe("train");
  });

  it("demonstrates chained one-operation calls with the redundant calls its knobs ask for", () => {
    const demos = one.sftDemos(new Rng(2), 2000, { thinkRate: 0, easyToolRate: 0.5, checkRate: 0.5 });
    for (const d of demos) {
      const calls = d.messages.filter((m) => m.role === "assistant" && m.content.includes("<tool_call>"));
      const tool = d.messages.filter((m) => m.role === "tool").map((m) => m.content);
      expect(calls).toHaveLength(Number(d.meta.calls));
      expect(Number(d.meta.redundant)).toBe(Number(d.meta.calls) - Number(d.meta.minCalls));
      expect(d.messages[d.messages.length - 1].content).toBe(`<answer>${d.meta.answer}</answer>`);
      expect(d.meta.correct).toBe(true);
      // a later call of a 2-3-call chain multiplies the earlier results
      if (d.meta.minCalls === 3)
        expect(calls[2].content).toBe(`<tool_call>${tool[0]}*${tool[1]}</tool_call>`);
      if (d.meta.minCalls === 2)
        expect(calls[1].content).toMatch(new RegExp(`^<tool_call>${tool[0]}\\*\\d+</tool_call>$`));
    }
    const share = (bucket: (b: string) => boolean) => {
      const b = demos.filter((d) => bucket(d.bucket));
      return b.filter((d) => Number(d.meta.redundant) > 0).length / b.length;
    };
    expect(Math.abs(share((b) => b === "calls0") - 0.5)).toBeLessThan(0.06);
    expect(Math.abs(share((b) => b !== "calls0") - 0.5)).toBeLessThan(0.04);
    const none = one.sftDemos(new Rng(2), 300, { easyToolRate: 0, checkRate: 0 });
    expect(none.every((d) => d.meta.redundant === 0)).toBe(true);
  });

  it("runs its tool locally with the one-operation rule", () => {
    expect(one.runToolLocally?.("calculator", "12*34")).toEqual({ ok: true, output: "408" });
    expect(one.runToolLocally?.("calculator", "(12+3)*4")).toEqual({ ok: false, output: ONE_OP_ERROR });
    expect(makeArithmeticTask().runToolLocally?.("calculator", "(12+3)*4")).toEqual({
      ok: true,
      output: "60",
    });
  });
});
