// The environment API's starting templates, each a complete module an author can edit: a
// key-value lookup the model must query, a unit converter, a multi-turn guessing game, and
// FrozenLake rewritten on the API (the same maps, moves and rewards as tasks/frozenlake.ts on
// the same seeds: tasks/env-api/env-api.test.ts checks it). Every template has a scripted
// policy(), so it dry-runs and has SFT demonstrations. The page offers them in its
// Environment tab; `npm run train -- --list` names them; `task.options.template` picks one.

export interface EnvTemplate {
  name: string;
  title: string;
  source: string;
}

const KV_LOOKUP = `// Key-value lookup: the answer is in a table only the lookup tool can read.
// The model must call lookup with the asked key, then answer with the value.
const KEYS = "abcdefgh";

export default {
  name: "kv-lookup",
  description: "Find a key's value with the lookup tool.",
  maxTurns: 3,
  tools: [
    {
      name: "lookup",
      description: "The value stored under a key.",
      parameters: {
        type: "object",
        properties: { key: { type: "string", description: "one letter a-h" } },
        required: ["key"],
      },
      run(args, state) {
        if (!(args.key in state.table)) throw new Error("no key " + JSON.stringify(args.key));
        return String(state.table[args.key]);
      },
    },
  ],
  reset(seed) {
    // Math.random is seeded per call from the episode's seed: the same seed, the same table.
    const table = {};
    for (const k of KEYS) table[k] = 10 + Math.floor(Math.random() * 90);
    const key = KEYS[Math.floor(Math.random() * KEYS.length)];
    return { prompt: "key " + key + "?", state: { table, key } };
  },
  check(state, episode) {
    const asked = episode.calls.some((c) => c.ok && c.name === "lookup");
    const right = episode.answer === String(state.table[state.key]);
    return { success: asked && right, score: asked && right ? 1 : 0 };
  },
  policy(state, episode) {
    if (episode.calls.length === 0)
      return '<tool_call>{"name":"lookup","arguments":{"key":"' + state.key + '"}}</tool_call>';
    return "<answer>" + episode.calls[episode.calls.length - 1].result + "</answer>";
  },
};
`;

const UNIT_CONVERTER = `// Unit converter: convert a length with the convert tool, answer the number.
const UNITS = { mm: 0.001, cm: 0.01, m: 1, km: 1000 };
const NAMES = Object.keys(UNITS);

export default {
  name: "unit-converter",
  description: "Convert lengths between mm, cm, m and km with a tool.",
  maxTurns: 3,
  tools: [
    {
      name: "convert",
      description: "Converts a length from one unit to another.",
      parameters: {
        type: "object",
        properties: {
          value: { type: "number" },
          from: { type: "string", enum: NAMES },
          to: { type: "string", enum: NAMES },
        },
        required: ["value", "from", "to"],
      },
      run(args) {
        if (!(args.from in UNITS) || !(args.to in UNITS)) throw new Error("units are " + NAMES.join(", "));
        return Math.round((args.value * UNITS[args.from]) / UNITS[args.to] * 1e6) / 1e6;
      },
    },
  ],
  reset(seed) {
    const value = 1 + Math.floor(Math.random() * 9);
    const from = NAMES[Math.floor(Math.random() * 4)];
    let to = NAMES[Math.floor(Math.random() * 4)];
    if (to === from) to = from === "m" ? "cm" : "m";
    return { prompt: value + " " + from + " in " + to + "?", state: { value, from, to } };
  },
  check(state, episode) {
    const want = Math.round((state.value * UNITS[state.from]) / UNITS[state.to] * 1e6) / 1e6;
    const got = Number(episode.answer);
    const ok = episode.answer !== null && Math.abs(got - want) <= 1e-9 + 1e-6 * Math.abs(want);
    return { success: ok, score: ok ? 1 : 0 };
  },
  policy(state, episode) {
    if (episode.calls.length === 0)
      return '<tool_call>{"name":"convert","arguments":' + JSON.stringify(state) + "}</tool_call>";
    return "<answer>" + episode.calls[0].result + "</answer>";
  },
};
`;

const GUESSING_GAME = `// Guessing game: find a secret number from 1 to 16; each wrong guess is told higher or lower.
export default {
  name: "guess-number",
  description: "Guess a secret number in 1-16 from higher/lower hints.",
  maxTurns: 6,
  actions: ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16"],
  reset(seed) {
    const secret = 1 + Math.floor(Math.random() * 16);
    return {
      system: "Guess my number, 1-16. Reply <answer>n</answer>.",
      prompt: "guess",
      state: { secret, lo: 1, hi: 16, guesses: 0 },
    };
  },
  step(state, text) {
    const m = text.match(/<answer>\\s*(\\d+)\\s*<\\/answer>/);
    if (!m) return { observation: "say <answer>n</answer>", reward: -0.1, done: false, valid: false };
    const n = Number(m[1]);
    state.guesses++;
    if (n === state.secret) return { observation: "yes", reward: 1, done: true };
    if (n < state.secret) state.lo = Math.max(state.lo, n + 1);
    else state.hi = Math.min(state.hi, n - 1);
    return { observation: n < state.secret ? "higher" : "lower", reward: 0, done: false };
  },
  check(state, episode) {
    const won = episode.turns.some((t) => t.observation === "yes");
    return { success: won, score: 0 };
  },
  policy(state) {
    return "<answer>" + Math.floor((state.lo + state.hi) / 2) + "</answer>";
  },
};
`;

const FROZENLAKE = `// FrozenLake on the environment API: the same maps, moves and rewards as the built-in
// frozenlake task (size 4, 80% ice, no slipping, 10 moves, goal 1, invalid -0.1) on the
// same seeds. Its maps come from the lab's seeded generator (mulberry32 over an FNV-1a hash),
// written out here, so they do not depend on the sandbox's Math.random.
const SIZE = 4;
const FROZEN = 0.8;
const SLIP = 0;
const GOAL_REWARD = 1;
const INVALID = -0.1;
const ACTIONS = ["Left", "Down", "Right", "Up"];
const DELTAS = { Left: [0, -1], Down: [1, 0], Right: [0, 1], Up: [-1, 0] };
const SIDEWAYS = { Left: ["Up", "Down"], Right: ["Up", "Down"], Up: ["Left", "Right"], Down: ["Left", "Right"] };

function hash32(text) {
  let h = 0x811c9dc5 >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}
// The generator's state is one number, so it lives in the episode's JSON state.
function next(rng) {
  rng.s = (rng.s + 0x6d2b79f5) >>> 0;
  let t = rng.s;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
function shuffle(rng, items) {
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next(rng) * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
function find(grid, ch) {
  for (let r = 0; r < grid.length; r++) if (grid[r].indexOf(ch) >= 0) return [r, grid[r].indexOf(ch)];
}
function reachable(grid, r0, c0) {
  const seen = new Set([r0 + "," + c0]);
  const queue = [[r0, c0]];
  while (queue.length > 0) {
    const [r, c] = queue.shift();
    for (const a of ACTIONS) {
      const nr = r + DELTAS[a][0];
      const nc = c + DELTAS[a][1];
      if (nr < 0 || nc < 0 || nr >= SIZE || nc >= SIZE || grid[nr][nc] === "H") continue;
      if (!seen.has(nr + "," + nc)) {
        seen.add(nr + "," + nc);
        queue.push([nr, nc]);
      }
    }
  }
  return seen;
}
function lake(seed) {
  const rng = { s: hash32("frozenlake:" + SIZE + ":" + FROZEN + ":" + seed) };
  for (;;) {
    const cells = shuffle(rng, Array.from({ length: SIZE * SIZE }, (_, i) => i));
    const grid = [];
    for (let r = 0; r < SIZE; r++) {
      let row = "";
      for (let c = 0; c < SIZE; c++) {
        const i = r * SIZE + c;
        row += i === cells[0] ? "S" : i === cells[1] ? "G" : next(rng) < FROZEN ? "F" : "H";
      }
      grid.push(row);
    }
    const [sr, sc] = find(grid, "S");
    const [gr, gc] = find(grid, "G");
    if (Math.abs(sr - gr) + Math.abs(sc - gc) < 2) continue;
    if (reachable(grid, sr, sc).has(gr + "," + gc)) return grid;
  }
}
function render(s) {
  return s.grid
    .map((row, r) =>
      row
        .split("")
        .map((ch, c) => {
          const here = r === s.row && c === s.col;
          if (ch === "H") return here ? "X" : "O";
          if (ch === "G") return here ? "*" : "G";
          return here ? "P" : "_";
        })
        .join(""),
    )
    .join("\\n");
}
function parseAction(text) {
  const answers = [...text.matchAll(/<answer>([\\s\\S]*?)<\\/answer>/g)];
  const body = (answers.length > 0 ? answers[answers.length - 1][1] : text).trim().toLowerCase();
  return ACTIONS.find((a) => a.toLowerCase() === body) || null;
}
// Breadth-first shortest path to the goal: the scripted policy.
function solve(s) {
  const prev = { [s.row + "," + s.col]: null };
  const queue = [[s.row, s.col]];
  for (let q = 0; q < queue.length; q++) {
    const [r, c] = queue[q];
    if (s.grid[r][c] === "G") {
      const path = [];
      for (let k = r + "," + c; prev[k]; k = prev[k][0]) path.unshift(prev[k][1]);
      return path;
    }
    for (const a of ACTIONS) {
      const nr = r + DELTAS[a][0];
      const nc = c + DELTAS[a][1];
      const k = nr + "," + nc;
      if (nr < 0 || nc < 0 || nr >= SIZE || nc >= SIZE || s.grid[nr][nc] === "H" || k in prev) continue;
      prev[k] = [r + "," + c, a];
      queue.push([nr, nc]);
    }
  }
  return [];
}

export default {
  name: "frozenlake-js",
  description: "FrozenLake grid navigation, written on the environment API.",
  maxTurns: 10,
  actions: ACTIONS,
  reset(seed) {
    const grid = lake(seed);
    const [row, col] = find(grid, "S");
    const state = { grid, row, col, won: false, rng: { s: hash32("frozenlake-slip:" + seed) } };
    return {
      system:
        "You are on a frozen lake. P is you, _ is ice, O is a hole, G is the goal. Reach G without " +
        "falling into a hole. Answer with one move: <answer>Left</answer>, <answer>Down</answer>, " +
        "<answer>Right</answer> or <answer>Up</answer>.",
      prompt: render(state),
      state,
    };
  },
  step(state, text) {
    const action = parseAction(text);
    if (action === null) return { observation: render(state), reward: INVALID, done: false, valid: false };
    let moved = action;
    if (SLIP > 0 && next(state.rng) < SLIP) moved = SIDEWAYS[action][Math.floor(next(state.rng) * 2)];
    state.row = Math.min(SIZE - 1, Math.max(0, state.row + DELTAS[moved][0]));
    state.col = Math.min(SIZE - 1, Math.max(0, state.col + DELTAS[moved][1]));
    const cell = state.grid[state.row][state.col];
    state.won = cell === "G";
    return { observation: render(state), reward: state.won ? GOAL_REWARD : 0, done: cell === "G" || cell === "H" };
  },
  check(state) {
    return { success: state.won, score: 0 };
  },
  policy(state) {
    return "<answer>" + (solve(state)[0] || "Left") + "</answer>";
  },
};
`;

export const ENV_TEMPLATES: readonly EnvTemplate[] = [
  { name: "kv-lookup", title: "Key-value lookup (a tool the model must query)", source: KV_LOOKUP },
  { name: "unit-converter", title: "Unit converter (a tool with three arguments)", source: UNIT_CONVERTER },
  { name: "guess-number", title: "Guessing game (multi-turn, higher/lower)", source: GUESSING_GAME },
  { name: "frozenlake-js", title: "FrozenLake on the API (multi-turn grid)", source: FROZENLAKE },
];

export const ENV_TEMPLATE_NAMES = ENV_TEMPLATES.map((t) => t.name);

/** A template's source by name; throws naming the known ones. */
export function envTemplate(name: string): EnvTemplate {
  const t = ENV_TEMPLATES.find((x) => x.name === name);
  if (!t)
    throw new Error(
      `task.options.template: unknown environment template "${name}" (known: ${ENV_TEMPLATE_NAMES.join(", ")})`,
    );
  return t;
}
