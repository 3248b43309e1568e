// Tests for tasks/function-calling.ts: tool bodies agree with the reference implementations
// (run as the sandbox runs a body: a function of `args`), ground-truth calls give the
// answer, demos replay correctly, verify reports calls for the ToolRL / Tool-N1 rewards.
import { describe, expect, it } from "vitest";
import {
  AUTHORS,
  BOOKS,
  FEES,
  LIBRARY_IMPL,
  LIBRARY_TOOLS,
  makeFunctionCallingTask,
  USERS,
} from "./function-calling.ts";
import { Rng } from "./rng.ts";
import type { CallRecord } from "./types.ts";

const task = makeFunctionCallingTask();

function runBody(name: string, args: Record<string, unknown>): unknown {
  const spec = LIBRARY_TOOLS.find((t) => t.name === name);
  if (!spec) throw new Error(name);
  return new Function("args", spec.body)(args);
}

describe("library tools", () => {
  it("bodies compute what the reference implementations compute", () => {
    const inputs: [string, Record<string, unknown>][] = [
      ...Object.keys(USERS).map(
        (u) => ["get_user_checked_out_books", { user_id: Number(u) }] as [string, Record<string, unknown>],
      ),
      ["get_user_checked_out_books", { user_id: 99 }],
      ...[...AUTHORS, "Nobody"].map(
        (a) => ["search_books_by_author", { author: a }] as [string, Record<string, unknown>],
      ),
      ...BOOKS.map((b) => ["get_book_info", { title: b.title }] as [string, Record<string, unknown>]),
      ["get_book_info", { title: "Missing" }],
      ...[...Object.keys(FEES), "poetry"].map(
        (g) => ["get_late_fee_per_day", { genre: g }] as [string, Record<string, unknown>],
      ),
    ];
    for (const [name, args] of inputs)
      expect(runBody(name, args), `${name} ${JSON.stringify(args)}`).toEqual(LIBRARY_IMPL[name](args));
    for (const t of LIBRARY_TOOLS) {
      expect(t.parameters.type).toBe("object");
      expect(t.parameters.required?.length).toBeGreaterThan(0);
    }
  });

  it("the seeds' example: user 1, Jane Doe, 5 days", () => {
    expect(LIBRARY_IMPL.get_user_checked_out_books({ user_id: 1 })).toEqual([
      "Python Basics",
      "Advanced Python",
      "Data Structures",
    ]);
    const jane = LIBRARY_IMPL.search_books_by_author({ author: "Jane Doe" }) as { title: string }[];
    expect(jane.map((b) => b.title)).toContain("Python Basics");
  });
});

describe("function-calling problems", () => {
  it("ground-truth calls (run on the tool bodies) determine the answer", () => {
    for (const p of task.sample(new Rng(1), 200)) {
      expect(p.messages[0].role).toBe("system");
      expect(p.messages[0].content).toContain("get_user_checked_out_books");
      const gt = p.meta.gtCalls as CallRecord[];
      const results = gt.map((c) => runBody(c.name, c.arguments ?? {}));
      const q = p.messages[1].content;
      let expected: number;
      switch (p.meta.template) {
        case "lateFee": {
          const [days, fee] = [...q.matchAll(/(\d+) (?:days|cents)/g)].map((m) => Number(m[1]));
          const mine = results[0] as string[];
          const byAuthor = (results[1] as { title: string }[]).map((b) => b.title);
          expected = mine.filter((t) => byAuthor.includes(t)).length * days * fee;
          break;
        }
        case "copies":
          expected = (results[0] as { copies_available: number }[]).reduce(
            (s, b) => s + b.copies_available,
            0,
          );
          break;
        case "countCheckedOut":
          expected = (results[0] as string[]).length;
          break;
        case "year":
          expected = (results[0] as { year: number }).year;
          break;
        default: {
          const days = Number(/returned (\d+) days/.exec(q)?.[1]);
          expect(gt[1].arguments).toEqual({ genre: (results[0] as { genre: string }).genre });
          expected = days * (results[1] as number);
        }
      }
      expect(p.answer, q).toBe(String(expected));
    }
  });

  it("eval set is deterministic and disjoint from training", () => {
    const ev = task.evalSet(30);
    expect(ev).toEqual(task.evalSet(30));
    const keys = new Set(ev.map((p) => p.id));
    for (const p of task.sample(new Rng(2), 2000)) expect(keys.has(p.id)).toBe(false);
  });

  it("verify grades the answer and reports predicted vs gt calls", () => {
    const p = task.sample(new Rng(3), 50).find((x) => x.meta.template === "lateFee");
    if (!p) throw new Error("no lateFee problem");
    const gt = p.meta.gtCalls as CallRecord[];
    const good = task.verify(p, p.answer, { calls: [...gt].reverse() });
    expect(good).toMatchObject({ correct: true, score: 1, detail: { callsMatch: true, gtCalls: gt } });
    const bad = task.verify(p, "0 cents and 1", { calls: gt.slice(0, 1) });
    expect(bad).toMatchObject({ correct: false, detail: { callsMatch: false } });
    expect(task.verify(p, p.answer).detail?.predictedCalls).toEqual([]);
  });

  it("demos hold the gt calls and the tool outputs, in chatml-turns order", () => {
    // Demos are drawn from the same prompts sample() gives for the "problems" fork.
    const problems = task.sample(new Rng(4).fork("problems"), 100);
    task.sftDemos(new Rng(4), 100).forEach((d, i) => {
      expect(d.messages.slice(0, 2)).toEqual(problems[i].messages);
      const gtTurns = d.meta.gtTurns as CallRecord[][];
      const roles = d.messages.map((m) => m.role);
      const expectedRoles = ["system", "user"];
      for (const turn of gtTurns) expectedRoles.push("assistant", ...turn.map(() => "tool"));
      expectedRoles.push("assistant");
      expect(roles).toEqual(expectedRoles);
      let k = 2;
      for (const turn of gtTurns) {
        const calls = [...d.messages[k].content.matchAll(/<tool_call>(.*?)<\/tool_call>/g)].map((m) =>
          JSON.parse(m[1]),
        );
        expect(calls).toEqual(turn.map((c) => ({ name: c.name, arguments: c.arguments })));
        turn.forEach((c, j) => {
          expect(JSON.parse(d.messages[k + 1 + j].content)).toEqual(runBody(c.name, c.arguments ?? {}));
        });
        k += 1 + turn.length;
      }
      const last = d.messages[d.messages.length - 1].content;
      const ans = /<answer>(.*)<\/answer>$/.exec(last)?.[1] ?? "";
      expect(ans).toBe(problems[i].answer);
    });
  });

  it("compact: every tool as a one-line signature, a shorter prompt, the same problems", () => {
    const compact = makeFunctionCallingTask({ compact: true });
    const sys = compact.sample(new Rng(5), 1)[0].messages[0].content;
    expect(sys).toContain("get_book_info(title: string)");
    expect(sys).toContain("get_user_checked_out_books(user_id: integer)");
    expect(sys).toContain("get_late_fee_per_day(genre: tech|fiction|science|history|cooking)");
    expect(sys).toContain("<tool_call>");
    const full = task.sample(new Rng(5), 1)[0].messages[0].content;
    expect(sys.length).toBeLessThan(full.length / 3);
    const a = compact.sample(new Rng(6), 20).map((p) => [p.messages[1], p.answer]);
    const b = task.sample(new Rng(6), 20).map((p) => [p.messages[1], p.answer]);
    expect(a).toEqual(b);
  });

  it("runs tools locally from JSON text or objects", () => {
    expect(task.runToolLocally?.("get_late_fee_per_day", '{"genre":"tech"}')).toEqual({
      ok: true,
      output: "25",
    });
    expect(task.runToolLocally?.("get_late_fee_per_day", { genre: "poetry" })?.ok).toBe(false);
    expect(task.runToolLocally?.("get_late_fee_per_day", "{oops")?.ok).toBe(false);
    expect(task.runToolLocally?.("nope", {})).toBeUndefined();
  });
});
