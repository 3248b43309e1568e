// Tests for tasks/function-calling.ts: tool bodies agree with the reference implementations
// (run as the sandbox runs a body: a function of `args`), ground-truth calls give the
// answer, demos replay correctly, verify reports calls for the ToolRL / Tool-N1 rewards;
// the generated catalogue (task.options.library) keeps the seeds' entries, has the key
// counts its header states, and gives eval/dev sets of distinct questions disjoint from
// training, while the seeds' library draws exactly what it drew before the catalogue existed.
import { describe, expect, it } from "vitest";
import {
  AUTHORS,
  BOOKS,
  CATALOGUE_LIBRARY,
  FEES,
  LIBRARY_IMPL,
  LIBRARY_TOOLS,
  type Library,
  libraryImpl,
  libraryTools,
  makeFunctionCallingTask,
  NO_TOOL_LIST_SYSTEM_PROMPT,
  singleCallKeyCounts,
  USERS,
} from "./function-calling.ts";
import { hash32, Rng } from "./rng.ts";
import { splitSide } from "./split.ts";
import type { CallRecord } from "./types.ts";

const task = makeFunctionCallingTask();

function runBody(name: string, args: Record<string, unknown>, tools = LIBRARY_TOOLS): unknown {
  const spec = tools.find((t) => t.name === name);
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

  it("toolList false: the system prompt leaves the tools to the chat template, the same problems", () => {
    const bare = makeFunctionCallingTask({ compact: true, toolList: false });
    const sys = bare.sample(new Rng(5), 1)[0].messages[0].content;
    expect(sys).toBe(NO_TOOL_LIST_SYSTEM_PROMPT);
    expect(sys).not.toContain("get_book_info");
    const a = bare.sample(new Rng(6), 20).map((p) => [p.messages[1], p.answer, p.meta.gtCalls]);
    const b = task.sample(new Rng(6), 20).map((p) => [p.messages[1], p.answer, p.meta.gtCalls]);
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

const SINGLE = ["year", "countCheckedOut", "copies"];

/** Every single-call key of a library (the templates' key formats). */
function singleCallKeys(lib: Library): string[] {
  return [
    ...lib.books.map((b) => `year:${b.title}`),
    ...Object.keys(lib.users).map((u) => `count:${u}`),
    ...lib.authors.map((a) => `copies:${a}`),
  ];
}

describe("the catalogue library", () => {
  const lib = CATALOGUE_LIBRARY;

  it("keeps the seeds' entries, has distinct titles and authors of 1-3 books, and its stated key counts", () => {
    expect(lib.books.slice(0, BOOKS.length)).toEqual(BOOKS);
    for (const [u, titles] of Object.entries(USERS)) expect(lib.users[Number(u)]).toEqual(titles);
    expect(new Set(lib.books.map((b) => b.title)).size).toBe(lib.books.length);
    const titles = new Set(lib.books.map((b) => b.title));
    for (const checked of Object.values(lib.users)) for (const t of checked) expect(titles.has(t)).toBe(true);
    for (const a of lib.authors.filter((x) => !AUTHORS.includes(x))) {
      const n = lib.books.filter((b) => b.author === a).length;
      expect(n, a).toBeGreaterThanOrEqual(1);
      expect(n, a).toBeLessThanOrEqual(3);
    }
    expect(Object.keys(lib.users).map(Number)).toEqual(
      Array.from({ length: Object.keys(lib.users).length }, (_, i) => i + 1),
    );
    expect(singleCallKeyCounts(lib)).toEqual({ year: 372, countCheckedOut: 166, copies: 188 });
    // Frozen: a change here changes every catalogue question and its side of the split.
    expect(hash32(JSON.stringify(lib)).toString(16)).toBe(CATALOGUE_DIGEST);
  });

  it("tool bodies compute what the reference implementations compute over the catalogue", () => {
    const tools = libraryTools(lib);
    const impl = libraryImpl(lib);
    const r = new Rng("catalogue-bodies");
    const inputs: [string, Record<string, unknown>][] = [
      ["get_user_checked_out_books", { user_id: 166 }],
      ["get_user_checked_out_books", { user_id: 167 }],
      ["search_books_by_author", { author: "Nobody" }],
      ["get_book_info", { title: "Missing" }],
    ];
    for (let i = 0; i < 30; i++) {
      inputs.push(["get_user_checked_out_books", { user_id: r.int(1, 166) }]);
      inputs.push(["search_books_by_author", { author: r.pick(lib.authors) }]);
      inputs.push(["get_book_info", { title: r.pick(lib.books).title }]);
    }
    for (const [name, args] of inputs)
      expect(runBody(name, args, tools), `${name} ${JSON.stringify(args)}`).toEqual(impl[name](args));
    // A search answer stays short enough for the ToolRL recipes' context of 704.
    for (const a of lib.authors)
      expect(JSON.stringify(impl.search_books_by_author({ author: a })).length).toBeLessThanOrEqual(240);
  });

  it("single-call eval (100) and dev sets hold distinct questions, disjoint by key from each other and training", () => {
    const task = makeFunctionCallingTask({ library: "catalogue", compact: true, templates: SINGLE });
    const keys = singleCallKeys(lib);
    const side = (k: string) => splitSide("function-calling", k, 0.2, 2);
    const evalKeys = keys.filter((k) => side(k) === "eval");
    const devKeys = keys.filter((k) => side(k) === "dev");
    expect([evalKeys.length, devKeys.length]).toEqual([147, 74]);
    const ev = task.evalSet(100);
    const dev = task.devSet?.(60) ?? [];
    const evIds = ev.map((p) => String(p.meta.key));
    const devIds = dev.map((p) => String(p.meta.key));
    expect(new Set(evIds).size).toBe(100);
    expect(new Set(devIds).size).toBe(60);
    for (const k of evIds) expect(side(k)).toBe("eval");
    for (const k of devIds) expect(side(k)).toBe("dev");
    expect(ev.filter((p) => p.meta.template === "countCheckedOut").length).toBeGreaterThan(20);
    const train = task.sample(new Rng(8), 3000).map((p) => String(p.meta.key));
    for (const k of train) expect(side(k), k).toBe("train");
    // Training reaches most of its side (the SFT data is not a handful of questions).
    expect(new Set(train).size).toBeGreaterThan(450);
    // Every held-out question is answerable by its ground-truth call on the catalogue's tools.
    const tools = libraryTools(lib);
    for (const p of ev) {
      const [c] = p.meta.gtCalls as CallRecord[];
      const out = runBody(c.name, c.arguments ?? {}, tools);
      const expected =
        p.meta.template === "year"
          ? (out as { year: number }).year
          : p.meta.template === "countCheckedOut"
            ? (out as string[]).length
            : (out as { copies_available: number }[]).reduce((s, b) => s + b.copies_available, 0);
      expect(p.answer).toBe(String(expected));
    }
    // More than the eval side holds fails loudly instead of repeating.
    expect(() => task.evalSet(148)).toThrow(/could not draw 148 eval problems/);
  });

  it("the seeds' library (the default) draws exactly what it drew before the catalogue existed", () => {
    // Digests of the eval set, a train sample, demos, tools and dev set, computed at commit
    // 01a7794 (before task.options.library): old configs and links replay unchanged.
    const digest = (o: Parameters<typeof makeFunctionCallingTask>[0], dev: boolean) => {
      const t = makeFunctionCallingTask(o);
      const parts = [
        t.evalSet(32),
        t.sample(new Rng(7), 200),
        t.sftDemos(new Rng(9), 50, { thinkRate: 0 }),
        t.tools,
        dev ? (t.devSet?.(16) ?? []) : [],
      ];
      return hash32(JSON.stringify(parts)).toString(16);
    };
    expect(digest({}, true)).toBe("1876d9c3");
    expect(digest({ library: "seeds" }, true)).toBe("1876d9c3");
    expect(digest({ compact: true, templates: SINGLE }, true)).toBe("d9e397a4");
    expect(digest({ splitVersion: 1 }, false)).toBe("f60fd9c2");
  });
});

const CATALOGUE_DIGEST = "f07dd25d";
