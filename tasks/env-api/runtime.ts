// The in-sandbox half of the environment API: the source a user's environment runs with.
// Every call into an environment (describe, reset, step, a tool, check, the scripted policy)
// is one sandbox run of `envProgram(source, call)`: the user's module first, line for line
// (so an error's line is the line the author wrote), then ENV_DISPATCH, which calls the
// asked-for function with the episode's state as JSON and checks what comes back (a prompt
// or messages, a finite reward, a boolean done, a state that survives JSON). The host never
// keeps a live object between calls, so an episode is its JSON state and nothing else: a
// replay, a bundle or an exported class that starts from the same state and seed sees the
// same numbers. Tested by tasks/env-api/env-api.test.ts.

/** The environment API version this lab runs (task.options.api_version, bundles' env_api). */
export const ENV_API_VERSION = 1;

/** Name under which the author's `export default` value is kept. */
const ENV_GLOBAL = "__labEnvModule";

/**
 * The author's module as a script: `export default <expr>` becomes an assignment on the same
 * line, so line numbers are kept. null when the source has no `export default`.
 */
export function moduleAsScript(source: string): string | null {
  const re = /^([ \t]*)export[ \t]+default[ \t]+/m;
  if (!re.test(source)) return null;
  return source.replace(re, `$1globalThis.${ENV_GLOBAL} = `);
}

/** How many `export default` lines a source has (exactly one is allowed). */
export function exportDefaultCount(source: string): number {
  return (source.match(/^[ \t]*export[ \t]+default[ \t]+/gm) ?? []).length;
}

/**
 * Runs after the module. `__labEnvCall` is the JSON request: {op, state, ...}. Errors the API
 * raises itself are EnvApiError (no line: the fault is in what the author returned, which the
 * message names); the author's own throws keep their name, message and line.
 */
export const ENV_DISPATCH = `
;(function (call) {
  function fail(message) {
    var e = new Error(message);
    e.name = "EnvApiError";
    throw e;
  }
  function kind(v) {
    if (v === null) return "null";
    if (Array.isArray(v)) return "an array";
    if (typeof v === "function") return "a function";
    if (typeof v === "object") {
      var p = Object.getPrototypeOf(v);
      if (p !== Object.prototype && p !== null) return "a " + ((v.constructor && v.constructor.name) || "non-plain object");
      return "an object";
    }
    return typeof v;
  }
  // A value that JSON carries unchanged: null, booleans, finite numbers, strings, arrays and
  // plain objects of those, no cycles. Anything else is named by its path.
  function checkJson(v, path, seen) {
    var t = typeof v;
    if (v === null || t === "boolean" || t === "string") return;
    if (t === "number") {
      if (!isFinite(v)) fail(path + " is " + v + ", not JSON (only finite numbers survive JSON)");
      return;
    }
    if (t === "undefined") fail(path + " is undefined, not JSON (use null)");
    if (t === "function" || t === "symbol" || t === "bigint") fail(path + " is " + kind(v) + ", not JSON");
    var k = kind(v);
    if (k !== "an array" && k !== "an object") fail(path + " is " + k + ", not JSON (use plain objects and arrays)");
    if (seen.indexOf(v) >= 0) fail(path + " refers back to itself (a cycle), not JSON");
    seen.push(v);
    if (Array.isArray(v)) for (var i = 0; i < v.length; i++) checkJson(v[i], path + "[" + i + "]", seen);
    else for (var key in v) checkJson(v[key], path + "." + key, seen);
    seen.pop();
  }
  function finite(v, what) {
    if (typeof v !== "number" || !isFinite(v)) fail(what + " must be a finite number, got " + (typeof v === "number" ? String(v) : kind(v)));
    return v;
  }
  function text(v, what) {
    if (typeof v !== "string") fail(what + " must be a string, got " + kind(v));
    return v;
  }
  var env = globalThis.${ENV_GLOBAL};
  if (env === null || typeof env !== "object") fail("export default must be an object (the environment), got " + kind(env));
  var tools = env.tools === undefined ? [] : env.tools;
  if (!Array.isArray(tools)) fail("tools must be an array, got " + kind(tools));
  function toolOf(name) {
    for (var i = 0; i < tools.length; i++) if (tools[i] && tools[i].name === name) return tools[i];
    return null;
  }
  var op = call.op;
  if (op === "describe") {
    if (typeof env.reset !== "function") fail("reset(seed) must be a function");
    if (env.step !== undefined && typeof env.step !== "function") fail("step must be a function when given");
    if (typeof env.check !== "function") fail("check(state, episode) must be a function");
    var names = {};
    var specs = tools.map(function (t, i) {
      if (t === null || typeof t !== "object") fail("tools[" + i + "] must be an object");
      if (typeof t.name !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(t.name)) fail("tools[" + i + "].name must be an identifier");
      if (names[t.name]) fail("tools[" + i + "]: duplicate tool name " + t.name);
      names[t.name] = true;
      if (typeof t.description !== "string") fail("tools[" + i + "] (" + t.name + ").description must be a string");
      var params = t.parameters === undefined ? { type: "object", properties: {} } : t.parameters;
      if (params === null || typeof params !== "object" || params.type !== "object") fail("tools[" + i + "] (" + t.name + ").parameters must be a JSON schema with type \\"object\\"");
      checkJson(params, "tools[" + i + "].parameters", []);
      if (typeof t.run !== "function") fail("tools[" + i + "] (" + t.name + ").run(args, state) must be a function");
      return { name: t.name, description: t.description, parameters: params };
    });
    var maxTurns = env.maxTurns === undefined ? (env.step ? 8 : specs.length > 0 ? 4 : 1) : env.maxTurns;
    if (typeof maxTurns !== "number" || !(maxTurns >= 1) || Math.floor(maxTurns) !== maxTurns) fail("maxTurns must be a whole number >= 1, got " + String(maxTurns));
    var actions = env.actions === undefined ? [] : env.actions;
    if (!Array.isArray(actions) || actions.some(function (a) { return typeof a !== "string"; })) fail("actions must be an array of strings");
    var name = env.name === undefined ? "env" : text(env.name, "name");
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name)) fail("name must be 1-64 letters, digits, '_', '.' or '-', got " + JSON.stringify(name));
    return {
      name: name,
      description: env.description === undefined ? "" : text(env.description, "description"),
      maxTurns: maxTurns,
      tools: specs,
      multiTurn: typeof env.step === "function",
      policy: typeof env.policy === "function",
      actions: actions,
    };
  }
  if (op === "reset") {
    var r = env.reset(call.seed);
    if (r === null || typeof r !== "object") fail("reset(seed) must return {prompt or messages, state}, got " + kind(r));
    var messages;
    if (r.messages !== undefined) {
      if (!Array.isArray(r.messages) || r.messages.length === 0) fail("reset(seed).messages must be a non-empty array");
      messages = r.messages.map(function (m, i) {
        if (m === null || typeof m !== "object") fail("reset(seed).messages[" + i + "] must be {role, content}");
        if (m.role !== "system" && m.role !== "user" && m.role !== "assistant") fail("reset(seed).messages[" + i + "].role must be system, user or assistant, got " + JSON.stringify(m.role));
        return { role: m.role, content: text(m.content, "reset(seed).messages[" + i + "].content") };
      });
      if (messages[messages.length - 1].role !== "user") fail("reset(seed).messages must end with a user message");
    } else {
      messages = [];
      if (r.system !== undefined) messages.push({ role: "system", content: text(r.system, "reset(seed).system") });
      messages.push({ role: "user", content: text(r.prompt, "reset(seed).prompt") });
    }
    var state0 = r.state === undefined ? null : r.state;
    checkJson(state0, "reset(seed).state", []);
    return { messages: messages, state: state0 };
  }
  var state = call.state;
  if (op === "step") {
    var s = env.step(state, call.text, call.turn);
    if (s === null || typeof s !== "object") fail("step(state, text) must return {observation, reward, done}, got " + kind(s));
    var next = s.state === undefined ? state : s.state;
    checkJson(next, "the state after step()", []);
    if (typeof s.done !== "boolean") fail("step(state, text).done must be a boolean, got " + kind(s.done));
    return {
      observation: s.done && s.observation === undefined ? "" : text(s.observation, "step(state, text).observation"),
      reward: s.reward === undefined ? 0 : finite(s.reward, "step(state, text).reward"),
      done: s.done,
      valid: s.valid === undefined ? true : !!s.valid,
      state: next,
    };
  }
  if (op === "tool") {
    var tool = toolOf(call.name);
    if (!tool) fail("no tool " + JSON.stringify(call.name));
    var out = tool.run(call.args, state);
    var result = out === undefined ? null : out;
    checkJson(result, "the result of " + call.name + "()", []);
    checkJson(state, "the state after " + call.name + "()", []);
    return { result: result, state: state };
  }
  if (op === "check") {
    var c = env.check(state, call.episode);
    if (c === null || typeof c !== "object") fail("check(state, episode) must return {success, score}, got " + kind(c));
    if (typeof c.success !== "boolean") fail("check(state, episode).success must be a boolean, got " + kind(c.success));
    return { success: c.success, score: c.score === undefined ? (c.success ? 1 : 0) : finite(c.score, "check(state, episode).score") };
  }
  if (op === "policy") {
    if (typeof env.policy !== "function") fail("the environment has no policy(state, episode)");
    return { text: text(env.policy(state, call.episode), "policy(state, episode)") };
  }
  fail("unknown call " + JSON.stringify(op));
})(__labEnvCall)
`;

/** The program one environment call runs: the module, then the call's JSON, then the dispatch. */
export function envProgram(script: string, call: Record<string, unknown>): string {
  return `${script}\n;var __labEnvCall = ${JSON.stringify(call)};${ENV_DISPATCH}`;
}
