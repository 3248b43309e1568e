// Function calling over a small library (the seeds' example): user-defined tools with
// JSON-schema parameters and JS bodies that carry their own copy of the dataset into the
// sandbox, problems with ground-truth calls, and demos in the `chatml-turns` template.
// The TS functions in LIBRARY_IMPL are the reference the demos use to fill tool responses;
// the test runs each tool body as the sandbox would and checks it against them.
// verify() grades the final answer and reports predicted vs ground-truth calls for the
// ToolRL / Tool-N1 rewards. Tested by tasks/function-calling.test.ts.

import { z } from "zod";
import { share } from "./options.ts";
import type { Rng } from "./rng.ts";
import { DEFAULT_EVAL_FRACTION, drawSplit, evalRng, SPLIT_VERSION, type SplitVersion } from "./split.ts";
import type { CallRecord, Demo, LocalToolResult, Message, Problem, Task, UserToolSpec } from "./types.ts";
import { callsMatch, verifyNumeric } from "./verify.ts";

export interface Book {
  title: string;
  author: string;
  year: number;
  genre: string;
  copies_available: number;
}

export const BOOKS: Book[] = [
  { title: "Python Basics", author: "Jane Doe", year: 2015, genre: "tech", copies_available: 3 },
  { title: "Advanced Python", author: "Jane Doe", year: 2018, genre: "tech", copies_available: 0 },
  { title: "Data Structures", author: "John Smith", year: 2012, genre: "tech", copies_available: 2 },
  { title: "Algorithms Today", author: "John Smith", year: 2020, genre: "tech", copies_available: 1 },
  { title: "The Quiet River", author: "Ada Park", year: 1999, genre: "fiction", copies_available: 4 },
  { title: "Night Garden", author: "Ada Park", year: 2005, genre: "fiction", copies_available: 2 },
  { title: "Winter Roads", author: "Ada Park", year: 2011, genre: "fiction", copies_available: 0 },
  { title: "Stars and Atoms", author: "Liu Wei", year: 2009, genre: "science", copies_available: 5 },
  { title: "The Living Cell", author: "Liu Wei", year: 2016, genre: "science", copies_available: 1 },
  { title: "Old Empires", author: "Maria Garcia", year: 2001, genre: "history", copies_available: 2 },
  { title: "Sea Trade", author: "Maria Garcia", year: 2014, genre: "history", copies_available: 3 },
  { title: "Cooking for Two", author: "Jane Doe", year: 2021, genre: "cooking", copies_available: 6 },
];

export const USERS: Record<number, string[]> = {
  1: ["Python Basics", "Advanced Python", "Data Structures"],
  2: ["The Quiet River", "Night Garden", "Stars and Atoms", "Old Empires"],
  3: ["Cooking for Two", "Sea Trade"],
  4: ["Algorithms Today", "Winter Roads", "The Living Cell", "Python Basics", "Night Garden"],
  5: ["Old Empires"],
  6: ["Advanced Python", "Cooking for Two", "Stars and Atoms"],
};

/** Late fee in cents per day, by genre. */
export const FEES: Record<string, number> = { tech: 25, fiction: 15, science: 20, history: 10, cooking: 5 };

export const AUTHORS = [...new Set(BOOKS.map((b) => b.author))];

/** The reference implementations; tool bodies below must compute the same. */
export const LIBRARY_IMPL: Record<string, (args: Record<string, unknown>) => unknown> = {
  get_user_checked_out_books: (args) =>
    USERS[Number(args.user_id)] ?? { error: `no user ${String(args.user_id)}` },
  search_books_by_author: (args) =>
    BOOKS.filter((b) => b.author === args.author).map((b) => ({
      title: b.title,
      author: b.author,
      copies_available: b.copies_available,
    })),
  get_book_info: (args) =>
    BOOKS.find((b) => b.title === args.title) ?? { error: `no book ${String(args.title)}` },
  get_late_fee_per_day: (args) => FEES[String(args.genre)] ?? { error: `no genre ${String(args.genre)}` },
};

// Each body is a function body over `args` (sandbox/types.ts ToolSpec); data is inlined so
// the sandbox needs nothing from the host.
export const LIBRARY_TOOLS: UserToolSpec[] = [
  {
    name: "get_user_checked_out_books",
    description: "Titles of the books a user has checked out.",
    parameters: {
      type: "object",
      properties: { user_id: { type: "integer", description: "the user's id" } },
      required: ["user_id"],
    },
    body: `const USERS = ${JSON.stringify(USERS)};
const books = USERS[String(args.user_id)];
return books === undefined ? { error: "no user " + String(args.user_id) } : books;`,
  },
  {
    name: "search_books_by_author",
    description: "Books by an author, with the copies available.",
    parameters: {
      type: "object",
      properties: { author: { type: "string", description: "full name of the author" } },
      required: ["author"],
    },
    body: `const BOOKS = ${JSON.stringify(BOOKS)};
return BOOKS.filter((b) => b.author === args.author)
  .map((b) => ({ title: b.title, author: b.author, copies_available: b.copies_available }));`,
  },
  {
    name: "get_book_info",
    description: "Author, year, genre and copies available of a book, by exact title.",
    parameters: {
      type: "object",
      properties: { title: { type: "string" } },
      required: ["title"],
    },
    body: `const BOOKS = ${JSON.stringify(BOOKS)};
const b = BOOKS.find((x) => x.title === args.title);
return b === undefined ? { error: "no book " + String(args.title) } : b;`,
  },
  {
    name: "get_late_fee_per_day",
    description: "Late fee in cents per day for a genre.",
    parameters: {
      type: "object",
      properties: { genre: { type: "string", enum: Object.keys(FEES) } },
      required: ["genre"],
    },
    body: `const FEES = ${JSON.stringify(FEES)};
const f = FEES[String(args.genre)];
return f === undefined ? { error: "no genre " + String(args.genre) } : f;`,
  },
];

/** The compact system prompt: how to call, where to answer, and the tool schemas. */
export function functionCallingSystemPrompt(tools: UserToolSpec[]): string {
  const schemas = tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
  return (
    "You can call tools. Write each call as <tool_call>" +
    '{"name": <name>, "arguments": <json object>}</tool_call>; calls in one turn run in parallel and ' +
    "their results come back as <tool_response>. Think in <think></think>. Put the final answer " +
    "in <answer></answer>.\nTools:\n" +
    schemas.map((s) => JSON.stringify(s)).join("\n")
  );
}

interface FcInstance {
  template: string;
  question: string;
  /** Ground-truth calls, grouped by turn (the calls of a turn run in parallel). */
  turns: CallRecord[][];
  answer: number;
  bucket: "single-call" | "multi-call";
  key: string;
}

const call = (name: string, args: Record<string, unknown>): CallRecord => ({ name, arguments: args });

function titlesOf(v: unknown): string[] {
  return Array.isArray(v)
    ? (v as { title?: string }[]).map((x) => (typeof x === "string" ? x : String(x.title)))
    : [];
}

export const FC_TEMPLATES: Record<string, (rng: Rng) => FcInstance> = {
  lateFee(rng) {
    const user = rng.int(1, 6);
    const checked = USERS[user];
    // Prefer an author the user has books by, so the answer is rarely a trivial 0.
    const theirs = [...new Set(checked.map((t) => BOOKS.find((b) => b.title === t)?.author ?? ""))];
    const author = rng.bool(0.8) ? rng.pick(theirs) : rng.pick(AUTHORS);
    const days = rng.int(2, 30);
    const fee = rng.pick([5, 10, 15, 20, 25, 50]);
    const byAuthor = new Set(titlesOf(LIBRARY_IMPL.search_books_by_author({ author })));
    const count = checked.filter((t) => byAuthor.has(t)).length;
    return {
      template: "lateFee",
      question: `User ${user} wants to return all books by ${author} they have checked out. Each book is ${days} days overdue and the late fee is ${fee} cents per day per book. What is the total late fee in cents?`,
      turns: [
        [call("get_user_checked_out_books", { user_id: user }), call("search_books_by_author", { author })],
      ],
      answer: count * days * fee,
      bucket: "multi-call",
      key: `lateFee:${user}:${author}:${days}:${fee}`,
    };
  },
  copies(rng) {
    const author = rng.pick(AUTHORS);
    const books = LIBRARY_IMPL.search_books_by_author({ author }) as { copies_available: number }[];
    return {
      template: "copies",
      question: `How many copies of books by ${author} are available in total?`,
      turns: [[call("search_books_by_author", { author })]],
      answer: books.reduce((s, b) => s + b.copies_available, 0),
      bucket: "single-call",
      key: `copies:${author}`,
    };
  },
  countCheckedOut(rng) {
    const user = rng.int(1, 6);
    return {
      template: "countCheckedOut",
      question: `How many books does user ${user} have checked out?`,
      turns: [[call("get_user_checked_out_books", { user_id: user })]],
      answer: USERS[user].length,
      bucket: "single-call",
      key: `count:${user}`,
    };
  },
  year(rng) {
    const book = rng.pick(BOOKS);
    return {
      template: "year",
      question: `In which year was "${book.title}" published?`,
      turns: [[call("get_book_info", { title: book.title })]],
      answer: book.year,
      bucket: "single-call",
      key: `year:${book.title}`,
    };
  },
  bookFee(rng) {
    const book = rng.pick(BOOKS);
    const days = rng.int(2, 40);
    return {
      template: "bookFee",
      question: `"${book.title}" is returned ${days} days late. What is its late fee in cents?`,
      turns: [
        [call("get_book_info", { title: book.title })],
        [call("get_late_fee_per_day", { genre: book.genre })],
      ],
      answer: days * FEES[book.genre],
      bucket: "multi-call",
      key: `bookFee:${book.title}:${days}`,
    };
  },
};

function runImpl(name: string, args: Record<string, unknown>): LocalToolResult | undefined {
  const f = LIBRARY_IMPL[name];
  if (!f) return undefined;
  const value = f(args);
  const failed = typeof value === "object" && value !== null && "error" in value;
  return { ok: !failed, output: JSON.stringify(value) };
}

/**
 * The same instructions with each tool as a one-line signature instead of its JSON schema
 * (about 330 characters instead of about 1,100), for small contexts (`task.options.compact`).
 */
export function compactSystemPrompt(tools: UserToolSpec[]): string {
  const sig = (t: UserToolSpec) => {
    const props = (t.parameters.properties ?? {}) as Record<string, { type?: string; enum?: string[] }>;
    const args = Object.entries(props).map(([k, v]) => `${k}: ${v.enum ? v.enum.join("|") : v.type}`);
    return `${t.name}(${args.join(", ")})`;
  };
  return (
    'Call tools as <tool_call>{"name": <name>, "arguments": {...}}</tool_call>; ' +
    "results come back as <tool_response>. Answer in <answer></answer>.\nTools: " +
    tools.map(sig).join("; ")
  );
}

/** task.options of function-calling: templates, evalFraction, compact and `sft` ({thinkRate}). */
export const FUNCTION_CALLING_OPTIONS = z
  .object({
    templates: z.array(z.string()),
    evalFraction: share(),
    compact: z.boolean(),
    sft: z.object({ thinkRate: share() }).partial().strict(),
  })
  .partial()
  .strict();

export function makeFunctionCallingTask(
  opts: { templates?: string[]; evalFraction?: number; compact?: boolean; splitVersion?: SplitVersion } = {},
): Task {
  const name = "function-calling";
  const names = opts.templates ?? Object.keys(FC_TEMPLATES);
  for (const t of names)
    if (!(t in FC_TEMPLATES)) throw new Error(`function-calling: unknown template "${t}"`);
  // The key space is small (single-call templates have a handful of keys), so hold out more.
  const fraction = opts.evalFraction ?? Math.max(DEFAULT_EVAL_FRACTION, 0.2);
  const system = opts.compact
    ? compactSystemPrompt(LIBRARY_TOOLS)
    : functionCallingSystemPrompt(LIBRARY_TOOLS);
  const toProblem = (inst: FcInstance): Problem => ({
    id: `function-calling:${inst.key}`,
    messages: [
      { role: "system", content: system },
      { role: "user", content: inst.question },
    ],
    answer: String(inst.answer),
    bucket: inst.bucket,
    meta: { template: inst.template, key: inst.key, gtTurns: inst.turns, gtCalls: inst.turns.flat() },
  });
  const draw = (rng: Rng) => toProblem(FC_TEMPLATES[rng.pick(names)](rng));
  const key = (p: Problem) => String(p.meta.key);
  const split = { taskName: name, fraction, version: opts.splitVersion ?? SPLIT_VERSION };
  const sample = (rng: Rng, n: number) => drawSplit(rng, n, draw, key, "train", split);

  return {
    name,
    description: "Library function calling (seeds' example): user-defined JS tools over a small dataset.",
    defaultTemplate: "chatml-turns",
    tools: LIBRARY_TOOLS,
    buckets: ["single-call", "multi-call"],
    sample,
    // "prefer": the single-call templates have few keys (year 12, count 6, copies 5), so an
    // eval set of those repeats questions once its distinct ones run out.
    evalSet: (n) => drawSplit(evalRng(name), n, draw, key, "eval", { ...split, unique: "prefer" }),
    devSet: (n) => drawSplit(evalRng(name, "dev"), n, draw, key, "dev", { ...split, unique: "prefer" }),
    verify(problem, finalAnswerText, trajectory) {
      const res = verifyNumeric(problem.answer, finalAnswerText);
      const gtCalls = problem.meta.gtCalls as CallRecord[];
      const predictedCalls = trajectory?.calls ?? [];
      return {
        ...res,
        detail: { ...res.detail, gtCalls, predictedCalls, callsMatch: callsMatch(gtCalls, predictedCalls) },
      };
    },
    sftDemos(rng: Rng, n: number, knobs: { thinkRate?: number } = {}): Demo[] {
      const thinkRate = knobs.thinkRate ?? 1;
      const problems = sample(rng.fork("problems"), n);
      const r = rng.fork("behaviour");
      return problems.map((p, i) => {
        const turns = p.meta.gtTurns as CallRecord[][];
        const think = r.bool(thinkRate);
        const messages: Message[] = [...p.messages];
        turns.forEach((calls, t) => {
          const plan = t === 0 ? "I need data from the library tools." : "Now I can look up the rest.";
          const text = calls.map(
            (c) => `<tool_call>${JSON.stringify({ name: c.name, arguments: c.arguments })}</tool_call>`,
          );
          messages.push({
            role: "assistant",
            content: (think ? `<think>${plan}</think>` : "") + text.join("\n"),
          });
          for (const c of calls) {
            const out = runImpl(c.name, c.arguments ?? {});
            messages.push({ role: "tool", content: out?.output ?? "" });
          }
        });
        const final = think ? "<think>Combine the results.</think>" : "";
        messages.push({ role: "assistant", content: `${final}<answer>${p.answer}</answer>` });
        return { id: `${p.id}#demo${i}`, messages, bucket: p.bucket, meta: { ...p.meta, think } };
      });
    },
    runToolLocally(toolName: string, input: string | Record<string, unknown>) {
      if (typeof input === "string") {
        try {
          const parsed: unknown = JSON.parse(input);
          if (typeof parsed !== "object" || parsed === null)
            return { ok: false, output: "arguments are not an object" };
          return runImpl(toolName, parsed as Record<string, unknown>);
        } catch {
          return { ok: false, output: "arguments are not JSON" };
        }
      }
      return runImpl(toolName, input);
    },
  };
}

export const functionCallingTask: Task = makeFunctionCallingTask();
