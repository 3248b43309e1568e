// Function calling over a library: user-defined tools with JSON-schema parameters and JS
// bodies that carry their own copy of the dataset into the sandbox, problems with
// ground-truth calls, and demos in the `chatml-turns` template.
// Two libraries (task.options.library): "seeds", the seeds' hand-written 12 books and 6 users
// (the default, so configs and links made before the option replay unchanged), and
// "catalogue", the seeds' entries plus a generated catalogue (fixed word lists and a fixed
// seed, so it is the same in every process and release) of 360 more books by 183 authors and
// 160 more users: its single-call templates have 726 keys instead of 23, enough for an eval
// set of 100 distinct questions (see CATALOGUE_* below).
// The TS functions in LIBRARY_IMPL are the reference the demos use to fill tool responses;
// the test runs each tool body as the sandbox would and checks it against them.
// verify() grades the final answer and reports predicted vs ground-truth calls for the
// ToolRL / Tool-N1 rewards. Tested by tasks/function-calling.test.ts.

import { Rng } from "./rng.ts";
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

/** A library the tools serve and the templates ask about. */
export interface Library {
  books: Book[];
  /** Titles checked out, by user id (ids 1..N). */
  users: Record<number, string[]>;
  /** Distinct authors in book order. */
  authors: string[];
}

export const SEEDS_LIBRARY: Library = { books: BOOKS, users: USERS, authors: AUTHORS };

// The generated part of the catalogue. Changing a word list, a count or the seed changes
// every catalogue question and which ones are held out, so they are frozen; the test pins a
// digest of the result.
const CATALOGUE_ADJECTIVES = [
  "Silent",
  "Hidden",
  "Golden",
  "Broken",
  "Distant",
  "Burning",
  "Frozen",
  "Gentle",
  "Hollow",
  "Lonely",
  "Bright",
  "Crimson",
  "Silver",
  "Wild",
  "Secret",
  "Ancient",
  "Quiet",
  "Restless",
  "Open",
  "Narrow",
  "Bitter",
  "Sudden",
  "Paper",
  "Iron",
  "Velvet",
  "Glass",
  "Northern",
  "Southern",
  "Last",
  "First",
];
const CATALOGUE_NOUNS = [
  "Harbor",
  "Forest",
  "Mirror",
  "Valley",
  "Lantern",
  "Orchard",
  "Tower",
  "Bridge",
  "Island",
  "Meadow",
  "Canyon",
  "Window",
  "Garden",
  "Compass",
  "River",
  "Mountain",
  "Letter",
  "Kingdom",
  "Machine",
  "Desert",
  "Archive",
  "Signal",
  "Voyage",
  "Engine",
  "Planet",
  "Circuit",
  "Recipe",
  "Kitchen",
  "Atlas",
  "Theory",
];
const CATALOGUE_FIRST = [
  "Alice",
  "Ben",
  "Clara",
  "David",
  "Elena",
  "Farid",
  "Grace",
  "Hugo",
  "Irene",
  "Jonas",
  "Kira",
  "Leo",
  "Mina",
  "Nils",
  "Olga",
  "Pedro",
  "Rosa",
  "Sami",
  "Tara",
  "Umar",
  "Vera",
  "Wes",
  "Yuki",
  "Zane",
];
const CATALOGUE_LAST = [
  "Adams",
  "Brown",
  "Chen",
  "Diaz",
  "Evans",
  "Fischer",
  "Gupta",
  "Hill",
  "Ito",
  "Jones",
  "Khan",
  "Lopez",
  "Moreau",
  "Novak",
  "Okafor",
  "Petrov",
  "Quinn",
  "Rossi",
  "Sato",
  "Tanaka",
  "Usman",
  "Varga",
  "Weber",
  "Young",
];
/** Generated books, authors (1-3 books each, so a search stays short) and users. */
export const CATALOGUE_BOOKS = 360;
export const CATALOGUE_USERS = 160;
const CATALOGUE_SEED = "function-calling:catalogue:1";

function makeCatalogue(): Library {
  const rng = new Rng(CATALOGUE_SEED);
  const seedTitles = new Set(BOOKS.map((b) => b.title));
  const titles = rng
    .shuffle(CATALOGUE_ADJECTIVES.flatMap((a) => CATALOGUE_NOUNS.map((n) => `${a} ${n}`)))
    .filter((t) => !seedTitles.has(t))
    .slice(0, CATALOGUE_BOOKS);
  const names = rng
    .shuffle(CATALOGUE_FIRST.flatMap((f) => CATALOGUE_LAST.map((l) => `${f} ${l}`)))
    .filter((a) => !AUTHORS.includes(a));
  const genres = Object.keys(FEES);
  const books: Book[] = [...BOOKS];
  let a = 0;
  for (let i = 0; i < titles.length; a++) {
    const author = names[a];
    for (let k = rng.int(1, 3); k > 0 && i < titles.length; k--, i++)
      books.push({
        title: titles[i],
        author,
        year: rng.int(1950, 2024),
        genre: rng.pick(genres),
        copies_available: rng.int(0, 6),
      });
  }
  const users: Record<number, string[]> = { ...USERS };
  const first = Object.keys(USERS).length + 1;
  for (let u = first; u < first + CATALOGUE_USERS; u++)
    users[u] = rng.shuffle(books.map((b) => b.title)).slice(0, rng.int(1, 5));
  return { books, users, authors: [...new Set(books.map((b) => b.author))] };
}

export const CATALOGUE_LIBRARY: Library = makeCatalogue();

export const LIBRARIES = { seeds: SEEDS_LIBRARY, catalogue: CATALOGUE_LIBRARY };
export type LibraryName = keyof typeof LIBRARIES;

/** The reference implementations over `lib`; tool bodies below must compute the same. */
export function libraryImpl(lib: Library): Record<string, (args: Record<string, unknown>) => unknown> {
  return {
    get_user_checked_out_books: (args) =>
      lib.users[Number(args.user_id)] ?? { error: `no user ${String(args.user_id)}` },
    search_books_by_author: (args) =>
      lib.books
        .filter((b) => b.author === args.author)
        .map((b) => ({
          title: b.title,
          author: b.author,
          copies_available: b.copies_available,
        })),
    get_book_info: (args) =>
      lib.books.find((b) => b.title === args.title) ?? { error: `no book ${String(args.title)}` },
    get_late_fee_per_day: (args) => FEES[String(args.genre)] ?? { error: `no genre ${String(args.genre)}` },
  };
}

/** The seeds' library's reference implementations. */
export const LIBRARY_IMPL = libraryImpl(SEEDS_LIBRARY);

// Each body is a function body over `args` (sandbox/types.ts ToolSpec); data is inlined so
// the sandbox needs nothing from the host.
export function libraryTools(lib: Library): UserToolSpec[] {
  return [
    {
      name: "get_user_checked_out_books",
      description: "Titles of the books a user has checked out.",
      parameters: {
        type: "object",
        properties: { user_id: { type: "integer", description: "the user's id" } },
        required: ["user_id"],
      },
      body: `const USERS = ${JSON.stringify(lib.users)};
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
      body: `const BOOKS = ${JSON.stringify(lib.books)};
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
      body: `const BOOKS = ${JSON.stringify(lib.books)};
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
}

/** The seeds' library's tools. */
export const LIBRARY_TOOLS: UserToolSpec[] = libraryTools(SEEDS_LIBRARY);

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

/** Each template draws one question about `lib` (the rng calls over the seeds' library are those made before libraries existed). */
export const FC_TEMPLATES: Record<string, (rng: Rng, lib: Library) => FcInstance> = {
  lateFee(rng, lib) {
    const user = rng.int(1, Object.keys(lib.users).length);
    const checked = lib.users[user];
    // Prefer an author the user has books by, so the answer is rarely a trivial 0.
    const theirs = [...new Set(checked.map((t) => lib.books.find((b) => b.title === t)?.author ?? ""))];
    const author = rng.bool(0.8) ? rng.pick(theirs) : rng.pick(lib.authors);
    const days = rng.int(2, 30);
    const fee = rng.pick([5, 10, 15, 20, 25, 50]);
    const byAuthor = new Set(lib.books.filter((b) => b.author === author).map((b) => b.title));
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
  copies(rng, lib) {
    const author = rng.pick(lib.authors);
    const books = lib.books.filter((b) => b.author === author);
    return {
      template: "copies",
      question: `How many copies of books by ${author} are available in total?`,
      turns: [[call("search_books_by_author", { author })]],
      answer: books.reduce((s, b) => s + b.copies_available, 0),
      bucket: "single-call",
      key: `copies:${author}`,
    };
  },
  countCheckedOut(rng, lib) {
    const user = rng.int(1, Object.keys(lib.users).length);
    return {
      template: "countCheckedOut",
      question: `How many books does user ${user} have checked out?`,
      turns: [[call("get_user_checked_out_books", { user_id: user })]],
      answer: lib.users[user].length,
      bucket: "single-call",
      key: `count:${user}`,
    };
  },
  year(rng, lib) {
    const book = rng.pick(lib.books);
    return {
      template: "year",
      question: `In which year was "${book.title}" published?`,
      turns: [[call("get_book_info", { title: book.title })]],
      answer: book.year,
      bucket: "single-call",
      key: `year:${book.title}`,
    };
  },
  bookFee(rng, lib) {
    const book = rng.pick(lib.books);
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

/** Distinct keys of each single-call template over `lib` (multi-call ones have thousands). */
export function singleCallKeyCounts(lib: Library): Record<string, number> {
  return {
    year: lib.books.length,
    countCheckedOut: Object.keys(lib.users).length,
    copies: lib.authors.length,
  };
}

function runImpl(
  impl: ReturnType<typeof libraryImpl>,
  name: string,
  args: Record<string, unknown>,
): LocalToolResult | undefined {
  const f = impl[name];
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

/**
 * The system prompt without the tools (`task.options.toolList: false`), for a model whose chat
 * template lists the tools and the call format itself: where results come back and where to answer.
 */
export const NO_TOOL_LIST_SYSTEM_PROMPT =
  "Results come back as <tool_response>. Answer in <answer></answer>.";

/**
 * The demonstration of problem `p`: each ground-truth turn's tool calls (after a short plan
 * when `think`), the library's real results, then the answer.
 */
function fcDemo(impl: ReturnType<typeof libraryImpl>, p: Problem, i: number, think: boolean): Demo {
  const turns = p.meta.gtTurns as CallRecord[][];
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
      const out = runImpl(impl, c.name, c.arguments ?? {});
      messages.push({ role: "tool", content: out?.output ?? "" });
    }
  });
  const final = think ? "<think>Combine the results.</think>" : "";
  messages.push({ role: "assistant", content: `${final}<answer>${p.answer}</answer>` });
  return { id: `${p.id}#demo${i}`, messages, bucket: p.bucket, meta: { ...p.meta, think } };
}

/** A library tool run on arguments given as an object or as JSON text (refused unless an object). */
function runImplOnInput(
  impl: ReturnType<typeof libraryImpl>,
  toolName: string,
  input: string | Record<string, unknown>,
): LocalToolResult | undefined {
  if (typeof input === "string") {
    try {
      const parsed: unknown = JSON.parse(input);
      if (typeof parsed !== "object" || parsed === null)
        return { ok: false, output: "arguments are not an object" };
      return runImpl(impl, toolName, parsed as Record<string, unknown>);
    } catch {
      return { ok: false, output: "arguments are not JSON" };
    }
  }
  return runImpl(impl, toolName, input);
}

export function makeFunctionCallingTask(
  opts: {
    library?: LibraryName;
    templates?: string[];
    evalFraction?: number;
    compact?: boolean;
    /** false: the system prompt leaves the tools to the chat template (NO_TOOL_LIST_SYSTEM_PROMPT). */
    toolList?: boolean;
    splitVersion?: SplitVersion;
  } = {},
): Task {
  const name = "function-calling";
  const libraryName = opts.library ?? "seeds";
  const lib = LIBRARIES[libraryName];
  if (!lib)
    throw new Error(`function-calling: unknown library "${String(libraryName)}" (known: seeds, catalogue)`);
  const impl = libraryImpl(lib);
  const tools = libraryName === "seeds" ? LIBRARY_TOOLS : libraryTools(lib);
  const names = opts.templates ?? Object.keys(FC_TEMPLATES);
  for (const t of names)
    if (!(t in FC_TEMPLATES)) throw new Error(`function-calling: unknown template "${t}"`);
  // The key space is small (single-call templates have a handful of keys), so hold out more.
  const fraction = opts.evalFraction ?? Math.max(DEFAULT_EVAL_FRACTION, 0.2);
  const system =
    opts.toolList === false
      ? NO_TOOL_LIST_SYSTEM_PROMPT
      : opts.compact
        ? compactSystemPrompt(tools)
        : functionCallingSystemPrompt(tools);
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
  const draw = (rng: Rng) => toProblem(FC_TEMPLATES[rng.pick(names)](rng, lib));
  const key = (p: Problem) => String(p.meta.key);
  const split = { taskName: name, fraction, version: opts.splitVersion ?? SPLIT_VERSION };
  const sample = (rng: Rng, n: number) => drawSplit(rng, n, draw, key, "train", split);
  const unique = libraryName === "seeds" ? ("prefer" as const) : true;

  return {
    name,
    description:
      libraryName === "seeds"
        ? "Library function calling (seeds' example): user-defined JS tools over a small dataset."
        : "Library function calling over the generated catalogue (372 books, 166 users): user-defined JS tools.",
    defaultTemplate: "chatml-turns",
    tools,
    buckets: ["single-call", "multi-call"],
    sample,
    // The seeds' library: "prefer", since its single-call templates have few keys (year 12,
    // count 6, copies 5), so an eval set of those repeats questions once its distinct ones run
    // out. The catalogue: each question once (its 726 single-call keys put 147 on the
    // eval side and 74 on the dev side at the default fraction 0.2), failing loudly past that.
    evalSet: (n) => drawSplit(evalRng(name), n, draw, key, "eval", { ...split, unique }),
    devSet: (n) => drawSplit(evalRng(name, "dev"), n, draw, key, "dev", { ...split, unique }),
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
      return problems.map((p, i) => fcDemo(impl, p, i, r.bool(thinkRate)));
    },
    runToolLocally: (toolName: string, input: string | Record<string, unknown>) =>
      runImplOnInput(impl, toolName, input),
  };
}

export const functionCallingTask: Task = makeFunctionCallingTask();
