// Reading a call's strings, console arguments, values and errors out of the VM: through the
// helpers of prelude.ts, which run in a second context of the call's runtime that the code
// never sees (so replaced built-ins such as JSON or String cannot change how results are
// read), compiled on first use since most calls print and return primitives only. The
// host never copies more than the output cap out of the VM, and never a value nested deeper
// than MAX_VALUE_DEPTH (the bounded writer cuts it inside the VM), so nothing the host does
// with a result (JSON text, structured clone to another thread) can overflow its stack.
// Tested through sandbox/run-code.test.ts.
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from "quickjs-emscripten-core";
import { BOUNDED_SOURCE, HELPERS_SOURCE, MAX_VALUE_DEPTH } from "./prelude.ts";
import type { JsonValue } from "./types.ts";

export { MAX_VALUE_DEPTH };

type HelperName = "show" | "encode" | "describe" | "quote" | "cut";

export class VmReader {
  private helperCtx?: QuickJSContext;
  private helpers?: Record<"show" | "encode" | "describe" | "quote" | "util", QuickJSHandle>;
  private bounded?: Record<"show" | "encode" | "describe" | "cut", QuickJSHandle>;
  private lengthKey?: QuickJSHandle;

  constructor(
    private readonly runtime: QuickJSRuntime,
    private readonly vm: QuickJSContext,
    private readonly own: (h: QuickJSHandle) => QuickJSHandle,
    private readonly cap: number,
  ) {}

  /** The helper context, for the caller to dispose after the call's handles. */
  get context(): QuickJSContext | undefined {
    return this.helperCtx;
  }

  private compile(
    hc: QuickJSContext,
    source: string,
    file: string,
    names: string[],
    arg?: QuickJSHandle,
  ): Record<string, QuickJSHandle> | undefined {
    const compiled = hc.evalCode(source, file, { type: "global" });
    if (compiled.error) return void compiled.error.dispose();
    const fn = this.own(compiled.value);
    const made = arg ? hc.callFunction(fn, hc.undefined, arg) : hc.callFunction(fn, hc.undefined);
    if (made.error) return void made.error.dispose();
    const table = this.own(made.value);
    return Object.fromEntries(names.map((n) => [n, this.own(hc.getProp(table, n))]));
  }

  private call(fn: QuickJSHandle, name: HelperName, arg: QuickJSHandle, n: number): string | undefined {
    const hc = this.helperCtx as QuickJSContext;
    const called = hc.callFunction(fn, hc.undefined, arg, this.own(hc.newNumber(n)));
    if (called.error) return void called.error.dispose();
    let text: string | undefined;
    // quote and describe give JSON text, which getString copies exactly.
    if (hc.typeof(called.value) === "string")
      text =
        name === "quote" || name === "describe" ? hc.getString(called.value) : this.readString(called.value);
    called.value.dispose();
    return text;
  }

  /** Calls a helper (prelude.ts) with a value and a cap; undefined if it threw. */
  helper(name: HelperName, arg: QuickJSHandle, n = this.cap): string | undefined {
    if (!this.helperCtx) {
      this.helperCtx = this.runtime.newContext({ intrinsics: { BaseObjects: true, Eval: true, JSON: true } });
      const names = ["show", "encode", "describe", "quote", "util"];
      this.helpers = this.compile(this.helperCtx, HELPERS_SOURCE, "helpers.js", names) as typeof this.helpers;
    }
    const helpers = this.helpers;
    if (!helpers) return undefined;
    if (name !== "cut") {
      const text = this.call(helpers[name], name, arg, n);
      if (text !== "O" || name === "quote") return text;
    }
    // Longer than the cap or deeper than MAX_VALUE_DEPTH: the bounded writer, compiled on first need.
    this.bounded ??= this.compile(
      this.helperCtx,
      BOUNDED_SOURCE,
      "bounded.js",
      ["show", "encode", "describe", "cut"],
      helpers.util,
    ) as typeof this.bounded;
    const bounded = this.bounded;
    return bounded ? this.call(bounded[name as keyof typeof bounded], name, arg, n) : undefined;
  }

  lengthOf(h: QuickJSHandle): number {
    this.lengthKey ??= this.own(this.vm.newString("length"));
    const n = this.vm.getProp(h, this.lengthKey);
    const length = this.vm.getNumber(n);
    n.dispose();
    return length;
  }

  /**
   * getString goes through a C string: it stops at the first NUL and mangles lone
   * surrogates into U+FFFD. Its text is exact when no U+FFFD came back and the length is the
   * string's own; otherwise the string comes out as JSON text (escapes for both).
   */
  readString(h: QuickJSHandle, length = this.lengthOf(h)): string {
    const s = this.vm.getString(h);
    if (s.length === length && !s.includes("\uFFFD")) return s;
    const quoted = this.helper("quote", h, 0);
    return quoted === undefined ? s : (JSON.parse(quoted) as string);
  }

  /** One console argument as text, at most `max` code units plus one (the capture cuts at max). */
  show(h: QuickJSHandle, max: number): string {
    const type = this.vm.typeof(h);
    if (type === "string") {
      const length = this.lengthOf(h);
      if (length <= max) return this.readString(h, length);
    }
    if (type === "number") return String(this.vm.getNumber(h));
    if (type === "undefined" || type === "boolean") return String(this.vm.dump(h));
    // "=" + the text
    return this.helper("show", h, max)?.slice(1) ?? `[unprintable ${type}]`;
  }

  /**
   * Reads the result out: numbers and booleans directly, a string exactly (cut to
   * head...tail inside the VM when longer than the cap), anything else as JSON text made and
   * cut inside the VM (parts nested deeper than MAX_VALUE_DEPTH replaced, `truncated` set).
   * Undefined when the VM could not make the text (out of memory).
   */
  value(h: QuickJSHandle): { value?: JsonValue; truncated: boolean } | undefined {
    const { vm, cap } = this;
    const type = vm.typeof(h);
    if (type === "undefined") return { truncated: false };
    if (type === "number") {
      const n = vm.getNumber(h);
      return { value: Number.isFinite(n) ? n : String(n), truncated: false };
    }
    if (type === "boolean") return { value: vm.dump(h) as boolean, truncated: false };
    if (type === "string") {
      const length = this.lengthOf(h);
      if (length <= cap) return { value: this.readString(h, length), truncated: false };
      const cut = this.helper("cut", h, cap);
      return cut === undefined ? undefined : { value: cut, truncated: true };
    }
    // "J"/"K" + JSON text (K: parts nested too deep replaced), "T" + JSON text cut to the cap,
    // "S"/"C" + a string value (C: cut), "U": undefined.
    const text = this.helper("encode", h, cap);
    if (text === undefined) return undefined;
    const body = text.slice(1);
    switch (text[0]) {
      case "U":
        return { truncated: false };
      case "J":
      case "K":
        try {
          return { value: JSON.parse(body) as JsonValue, truncated: text[0] === "K" };
        } catch {
          return { value: body, truncated: true };
        }
      case "S":
        return { value: body, truncated: false };
      default:
        return { value: body, truncated: true };
    }
  }
}
