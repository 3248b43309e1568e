// JavaScript evaluated inside a call's QuickJS context, only when that call needs it (each
// compile costs about as much as a whole trivial call):
// - HELPERS_SOURCE, on the first object to print, object value to return or error to read:
//   show (console formatting), encode (value -> JSON text), describe (thrown value -> JSON).
// - TOOLS_SOURCE, when the request declares tools: defines each tool as a global function
//   that checks its arguments through the host's `check` before running the tool's body.
// Host functions arrive as arguments and stay in closures, never as globals.
// Tested through sandbox/run-code.test.ts.

export const HELPERS_SOURCE = `(function () {
  "use strict";
  const stringify = JSON.stringify, Str = String, isFiniteNumber = Number.isFinite;
  function replacer(key, x) {
    if (typeof x === "bigint") return Str(x);
    if (typeof x === "number" && !isFiniteNumber(x)) return Str(x);
    if (typeof x === "function") return "[Function " + (x.name || "anonymous") + "]";
    if (typeof x === "symbol") return x.toString();
    return x;
  }
  function safeString(v) {
    try { return Str(v); } catch (e) { return "[unprintable " + typeof v + "]"; }
  }
  function show(v) {
    if (typeof v === "string") return v;
    if (typeof v === "function" || typeof v === "symbol") return replacer("", v);
    if (typeof v === "bigint") return Str(v) + "n";
    if (v instanceof Error) return safeString(v.name) + ": " + safeString(v.message);
    if (v !== null && typeof v === "object") {
      try { const s = stringify(v, replacer); if (s !== undefined) return s; } catch (e) {}
    }
    return safeString(v);
  }
  function encode(v) {
    if (v === undefined) return undefined;
    if (typeof v !== "object" || v === null) return stringify(replacer("", v));
    try {
      const s = stringify(v, replacer);
      if (s !== undefined) return s;
    } catch (e) {}
    return stringify(safeString(v));
  }
  function describe(e) {
    if (e !== null && typeof e === "object" && "message" in e) {
      const stack = e.stack;
      return stringify({ name: safeString(e.name), message: safeString(e.message), stack: typeof stack === "string" ? stack : undefined });
    }
    return stringify({ name: "Error", message: "Uncaught " + show(e) });
  }
  return { show: show, encode: encode, describe: describe };
})`;

export const TOOLS_SOURCE = String.raw`(function (check, toolsJson) {
  "use strict";
  const stringify = JSON.stringify, Str = String, indirectEval = eval, Fn = Function;
  class ToolArgumentError extends Error {
    constructor(message) { super(message); this.name = "ToolArgumentError"; }
  }
  function compile(decl) {
    try {
      const f = indirectEval("(" + decl.body + "\n)");
      if (typeof f === "function") return f;
    } catch (e) {}
    try {
      return Fn("args", decl.body);
    } catch (e) {
      const err = new SyntaxError("in the body of tool " + decl.name + ": " + Str(e && e.message));
      return function () { throw err; };
    }
  }
  const decls = JSON.parse(toolsJson);
  for (let i = 0; i < decls.length; i++) {
    const index = i, impl = compile(decls[i]);
    const tool = { [decls[i].name]: function (args) {
      const problem = check(index, args === undefined ? "" : stringify(args));
      if (problem) throw new ToolArgumentError(problem);
      return impl(args);
    } }[decls[i].name];
    Object.defineProperty(globalThis, decls[i].name, { value: tool, writable: true, configurable: true, enumerable: false });
  }
})`;
