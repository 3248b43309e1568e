// JavaScript evaluated inside a call's QuickJS context, only when that call needs it (each
// compile costs about as much as a whole trivial call):
// - HELPERS_SOURCE, on the first object to print, object value to return, error to read or
//   string the host cannot copy exactly: show (console formatting), encode (value -> JSON
//   text), describe (thrown value -> JSON), quote. It runs in a second, pristine context of
//   the call's runtime, so code that replaced JSON or String cannot change how its results
//   are read. encode and show run the native JSON.stringify with a replacer that gives up
//   once a lower bound of the text passes the cap; whatever would come out longer than the
//   cap answers "O" and goes to
// - BOUNDED_SOURCE, compiled only then: the same text written in JavaScript that stops at the
//   cap (JSON.stringify(value, replacer)'s steps), the tail of a cut written from the value's
//   end the same way, and cut strings. So the host never copies more than the cap out of the
//   VM, whatever the value's size. A value that overflows has its toJSON and getters run once
//   per pass (up to three times).
// Host functions arrive as arguments and stay in closures, never as globals.
// Tested through sandbox/run-code.test.ts.

/**
 * The deepest nesting of arrays and objects a value keeps on its way out of the VM; deeper
 * parts come out as DEEP_TEXT and the result is marked truncated. Far above any tool's or
 * reward's real value, far below where a host's JSON or structured clone runs out of stack.
 */
export const MAX_VALUE_DEPTH = 64;
const DEEP_TEXT = `[nested deeper than ${MAX_VALUE_DEPTH} levels]`;

export const HELPERS_SOURCE = `(function () {
  "use strict";
  const stringify = JSON.stringify, parse = JSON.parse, Str = String, isFiniteNumber = Number.isFinite;
  const isArray = Array.isArray, tagOf = Object.prototype.toString, STOP = {}, MAX_DEPTH = ${MAX_VALUE_DEPTH};
  function replacer(x) {
    if (typeof x === "bigint") return Str(x);
    if (typeof x === "number" && !isFiniteNumber(x)) return Str(x);
    if (typeof x === "function") return "[Function " + (x.name || "anonymous") + "]";
    if (typeof x === "symbol") return x.toString();
    return x;
  }
  function safeString(v) {
    try { return Str(v); } catch (e) { return "[unprintable " + typeof v + "]"; }
  }
  // JSON.stringify(v, replacer), given up (STOP) once a lower bound of its length passes max
  // or the value nests deeper than MAX_DEPTH (the native writer never recurses further).
  // path: the containers from the root to the one being written (the replacer's holder).
  function counted(v, max) {
    let size = 0;
    const path = [];
    return stringify(v, function (key, x) {
      x = replacer(x);
      while (path.length > 0 && path[path.length - 1] !== this) path.pop();
      if (x !== null && typeof x === "object") {
        if (path.length >= MAX_DEPTH) throw STOP;
        path.push(x);
      }
      size += isArray(this) ? 1 : key.length + 3;
      size += typeof x === "string" ? x.length + 2 : typeof x === "object" ? 2 : 1;
      if (size > max + 8) throw STOP;
      return x;
    });
  }
  function isError(v) { return tagOf.call(v) === "[object Error]"; }
  // "J" + JSON text, "S" + a string value, "U": undefined; "O": longer than max or deeper
  // than MAX_DEPTH (bounded.js cuts).
  function encode(v, max) {
    let text;
    try { text = counted(v, max); } catch (e) {
      if (e === STOP) return "O";
      text = stringify(safeString(v));
    }
    if (text === undefined) return "U";
    if (text[0] === '"') { const s = parse(text); return s.length <= max ? "S" + s : "O"; }
    return text.length <= max ? "J" + text : "O";
  }
  // "=" + console text of one argument; "O": longer than max.
  function show(v, max) {
    let s;
    if (typeof v === "string") s = v;
    else if (typeof v === "function" || typeof v === "symbol") s = replacer(v);
    else if (typeof v === "bigint") s = Str(v) + "n";
    else if (v !== null && typeof v === "object") {
      if (isError(v)) s = safeString(v.name) + ": " + safeString(v.message);
      else try { s = counted(v, max); } catch (e) { if (e === STOP) return "O"; }
    }
    if (s === undefined) s = safeString(v);
    return s.length <= max ? "=" + s : "O";
  }
  // A thrown object with a message and no name (not an Error) is named Error, not "undefined".
  function nameOf(n) { return n === undefined || n === null || n === "" ? "Error" : safeString(n); }
  function describe(e, max) {
    let d;
    if (e !== null && typeof e === "object" && "message" in e) {
      const stack = e.stack;
      d = { name: nameOf(e.name), message: safeString(e.message), stack: typeof stack === "string" ? stack : "" };
    } else {
      const s = show(e, max);
      if (s === "O") return "O";
      d = { name: "Error", message: "Uncaught " + s.slice(1), stack: "" };
    }
    if (d.name.length > max || d.message.length > max || d.stack.length > max) return "O";
    return stringify(d);
  }
  function quote(s) { return stringify(s); }
  const util = { replacer: replacer, safeString: safeString, isError: isError, STOP: STOP };
  return { show: show, encode: encode, describe: describe, quote: quote, util: util };
})`;

export const BOUNDED_SOURCE = `(function (u) {
  "use strict";
  const stringify = JSON.stringify, Str = String, isFiniteNumber = Number.isFinite, keys = Object.keys;
  const isArray = Array.isArray, tagOf = Object.prototype.toString, apply = Reflect.apply;
  const STOP = u.STOP, UNDEF = {}, safeString = u.safeString, MAX_DEPTH = ${MAX_VALUE_DEPTH};
  const DEEP_TEXT = ${JSON.stringify(DEEP_TEXT)};
  function isHigh(c) { return c >= 0xd800 && c <= 0xdbff; }
  function isLow(c) { return c >= 0xdc00 && c <= 0xdfff; }
  // The first (last) n code units of s, one fewer where the cut would split a surrogate pair.
  function headOf(s, n) {
    if (n >= s.length) return s;
    if (n > 0 && isHigh(s.charCodeAt(n - 1)) && isLow(s.charCodeAt(n))) n--;
    return s.slice(0, n);
  }
  function tailOf(s, n) {
    if (n >= s.length) return s;
    let start = s.length - n;
    if (n > 0 && isLow(s.charCodeAt(start)) && isHigh(s.charCodeAt(start - 1))) start++;
    return s.slice(start);
  }
  // headTail (run-code.ts): head "..." tail within max code units.
  function joinCut(head, tail, max) {
    if (max <= 3) return headOf(head, max);
    const keep = max - 3, h = Math.ceil(keep / 2);
    return headOf(head, h) + "..." + tailOf(tail, keep - h);
  }
  function cut(s, max) { return s.length <= max ? s : joinCut(s, s, max); }
  function stringValue(s, max) { return (s.length <= max ? "S" : "C") + cut(s, max); }
  function unbox(v) {
    switch (tagOf.call(v)) {
      case "[object Number]": return +v;
      case "[object String]": return Str(v);
      case "[object Boolean]": try { return Boolean.prototype.valueOf.call(v); } catch (e) { return v; }
      default: return v;
    }
  }
  // SerializeJSONProperty of JSON.stringify(value, replacer), up to the value to write.
  function resolve(key, value) {
    if (value !== null && (typeof value === "object" || typeof value === "bigint")) {
      const toJSON = value.toJSON;
      if (typeof toJSON === "function") value = apply(toJSON, value, [Str(key)]);
    }
    value = u.replacer(value);
    if (value !== null && typeof value === "object") value = unbox(value);
    const t = typeof value;
    return value === null || t === "boolean" || t === "string" || t === "number" || t === "object" ? value : UNDEF;
  }
  // The JSON text of a resolved value, stopped once longer than limit code units; reverse:
  // the same text written from its end (the tail of a cut).
  // A container MAX_DEPTH levels down is written as DEEP_TEXT (deep: true).
  function serialize(root, limit, reverse) {
    const parts = [], stack = [];
    let size = 0, deep = false;
    function put(s) {
      parts.push(s);
      size += s.length;
      if (size > limit) throw STOP;
    }
    function putString(s) {
      const room = limit - size + 1;
      if (s.length > room) s = reverse ? s.slice(s.length - room) : s.slice(0, room);
      put(stringify(s));
    }
    function write(v) {
      if (v === null) return put("null");
      switch (typeof v) {
        case "boolean": return put(v ? "true" : "false");
        case "string": return putString(v);
        case "number": return put(isFiniteNumber(v) ? Str(v) : "null");
      }
      if (stack.length >= MAX_DEPTH) {
        deep = true;
        return putString(DEEP_TEXT);
      }
      for (let i = 0; i < stack.length; i++) if (stack[i] === v) throw new TypeError("circular structure");
      stack.push(v);
      if (isArray(v)) {
        const n = v.length >>> 0;
        put(reverse ? "]" : "[");
        for (let j = 0; j < n; j++) {
          const i = reverse ? n - 1 - j : j;
          if (j > 0) put(",");
          const x = resolve(i, v[i]);
          write(x === UNDEF ? null : x);
        }
        put(reverse ? "[" : "]");
      } else {
        const ks = keys(v), n = ks.length;
        let first = true;
        put(reverse ? "}" : "{");
        for (let j = 0; j < n; j++) {
          const k = ks[reverse ? n - 1 - j : j];
          const x = resolve(k, v[k]);
          if (x === UNDEF) continue;
          if (!first) put(",");
          first = false;
          if (reverse) { write(x); put(":"); putString(k); }
          else { putString(k); put(":"); write(x); }
        }
        put(reverse ? "{" : "}");
      }
      stack.pop();
    }
    let complete = true;
    try { write(root); } catch (e) {
      if (e !== STOP) throw e;
      complete = false;
    }
    return { text: (reverse ? parts.reverse() : parts).join(""), complete: complete, deep: deep };
  }
  // As helpers.js's encode, plus "K" + JSON text with parts nested too deep replaced, "T" +
  // JSON text cut to head...tail and "C" + a cut string.
  function encode(v, max) {
    try {
      const r = resolve("", v);
      if (r === UNDEF) return "U";
      if (typeof r === "string") return stringValue(r, max);
      const head = serialize(r, max, false);
      if (head.complete) return (head.deep ? "K" : "J") + head.text;
      if (max <= 3) return "T" + headOf(head.text, max);
      return "T" + joinCut(head.text, serialize(r, max, true).text, max);
    } catch (e) {
      return stringValue(safeString(v), max);
    }
  }
  // "=" + console text, at most max + 1 code units (the host cuts at max).
  function show(v, max) {
    let s;
    if (typeof v === "string") s = v;
    else if (typeof v === "function" || typeof v === "symbol") s = u.replacer(v);
    else if (typeof v === "bigint") s = Str(v) + "n";
    else if (v !== null && typeof v === "object") {
      if (u.isError(v)) s = safeString(v.name) + ": " + safeString(v.message);
      else try {
        const r = resolve("", v);
        if (r !== UNDEF) s = typeof r === "string" ? stringify(r.slice(0, max + 1)) : serialize(r, max, false).text;
      } catch (e) {}
    }
    if (s === undefined) s = safeString(v);
    return "=" + s.slice(0, max + 1);
  }
  // "cut": the name or message was cut to the cap (the result reports truncated).
  function describe(e, max) {
    if (e !== null && typeof e === "object" && "message" in e) {
      const stack = e.stack, n = e.name;
      // A thrown object with a message and no name (not an Error) is named Error, not "undefined".
      const name = n === undefined || n === null || n === "" ? "Error" : safeString(n);
      const message = safeString(e.message);
      return stringify({
        name: cut(name, max),
        message: cut(message, max),
        stack: typeof stack === "string" ? stack.slice(0, max) : "",
        cut: name.length > max || message.length > max,
      });
    }
    const s = show(e, max);
    return stringify({ name: "Error", message: "Uncaught " + s.slice(1, max + 1), stack: "", cut: s.length > max + 1 });
  }
  return { show: show, encode: encode, describe: describe, cut: cut };
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
