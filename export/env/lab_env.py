# lab_env.py: a lab JavaScript environment (docs/ENVIRONMENTS.md) run outside the lab, with
# the lab's determinism, on a local Node (on PATH, or $LAB_NODE). Standard library only.
# env.json (export/env.ts envExportJson) carries the module as a script, the API's dispatch
# and the limits; every call (reset, step, a tool, check, policy) is one Node process running
# the module and the dispatch after a prelude that gives the sandbox's determinism:
#   Math.random  QuickJS's generator (xorshift64*) from the state QuickJS seeds it with when
#                the lab's sandbox runs a call with seed s (the clock at s ms: state s * 1000),
#                where s = hash32("env:<seed>:<call>:<turn>") as in the lab
#   Date.now(), new Date()  the virtual clock from 2025-01-01T00:00:00Z, 1 ms per read; UTC
# LabEnvEpisode replays the lab's episode loop (tasks/env-api/js-env.ts JsEnv.step): the
# Hermes tool call, the tool-call limit, step(), the turn limit and check()'s score added to
# the last reward. export/engines/env-parity.engines.test.ts plays the lab's and this file's
# episodes on the same seeds and turns and compares them.
import json
import os
import re
import subprocess

CLOCK_MS = 1735689600000

NODE_MAIN = r"""
const vm = require("vm");
const req = JSON.parse(require("fs").readFileSync(0, "utf8"));
let st = BigInt(req.seed) * 1000n;
if (st === 0n) st = 1n;
const M64 = (1n << 64n) - 1n;
const view = new DataView(new ArrayBuffer(8));
Math.random = function random() {
  let x = st;
  x ^= x >> 12n;
  x ^= (x << 25n) & M64;
  x ^= x >> 27n;
  st = x;
  view.setBigUint64(0, (0x3ffn << 52n) | (((x * 0x2545f4914f6cdd1dn) & M64) >> 12n));
  return view.getFloat64(0) - 1;
};
let clock = req.clock_ms;
const HostDate = Date;
Date.now = () => clock++;
globalThis.Date = new Proxy(HostDate, {
  construct(target, args) {
    return args.length === 0 ? new target(clock++) : new target(...args);
  },
  apply() {
    return new HostDate(clock++).toString();
  },
});
try {
  const v = vm.runInThisContext(req.program, { filename: "env.js", timeout: req.timeout_ms });
  let text = null;
  if (req.op === "tool") text = typeof v.result === "string" ? v.result : JSON.stringify(v.result);
  process.stdout.write(JSON.stringify({ ok: true, value: v === undefined ? null : v, text }));
} catch (e) {
  const stack = e && typeof e.stack === "string" ? e.stack : "";
  const m = stack.match(/env\.js:(\d+)/);
  const timeout = e && e.code === "ERR_SCRIPT_EXECUTION_TIMEOUT";
  process.stdout.write(JSON.stringify({
    ok: false,
    name: timeout ? "Timeout" : e && e.name ? e.name : "Error",
    message: timeout ? "the call ran out of its limit" : e && e.message !== undefined ? String(e.message) : String(e),
    line: m ? Number(m[1]) : null,
  }));
}
"""


def hash32(text, seed=0):
    """The lab's hash32 (tasks/rng.ts): FNV-1a over UTF-16 code units, then a murmur3 finaliser."""
    h = (0x811C9DC5 ^ seed) & 0xFFFFFFFF
    units = text.encode("utf-16-le")
    for i in range(0, len(units), 2):
        h ^= units[i] | (units[i + 1] << 8)
        h = (h * 0x01000193) & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h


def env_call_seed(seed, op, turn):
    return hash32("env:%d:%s:%d" % (seed & 0xFFFFFFFF, op, turn))


class EnvCallError(Exception):
    def __init__(self, call, name, message, line):
        self.call, self.name, self.line = call, name, line
        super().__init__(message)

    def text(self):
        """As the lab writes it: `<call>: <Name>: <message> (line N)`."""
        name = "" if self.name == "EnvApiError" else self.name + ": "
        line = " (line %d)" % self.line if self.line else ""
        return "%s: %s%s%s" % (self.call, name, str(self), line)


class LabEnvProgram:
    """The environment of env.json; call() runs one API call in Node."""

    def __init__(self, spec):
        self.spec = spec
        self.lines = spec["source"].count("\n") + 1
        self.node = os.environ.get("LAB_NODE", "node")

    def call(self, op, payload, seed):
        request = dict(op=op, **payload)
        program = self.spec["script"] + "\n;var __labEnvCall = " + json.dumps(request) + ";" + self.spec["dispatch"]
        req = {
            "op": op,
            "seed": seed,
            "clock_ms": CLOCK_MS,
            "timeout_ms": int(self.spec["timeout_s"] * 1000),
            "program": program,
        }
        r = subprocess.run(
            [self.node, "--max-old-space-size=" + str(max(16, int(self.spec["memory_mb"]))), "-e", NODE_MAIN],
            input=json.dumps(req),
            capture_output=True,
            text=True,
            timeout=self.spec["timeout_s"] + 30,
            env=dict(os.environ, TZ="UTC"),
        )
        try:
            out = json.loads(r.stdout)
        except ValueError:
            raise EnvCallError(op, "Error", (r.stderr.strip() or "node failed").split("\n")[-1], None)
        if not out["ok"]:
            line = out["line"] if out["line"] is not None and out["line"] <= self.lines else None
            raise EnvCallError(op, out["name"], out["message"], line)
        return out["value"], out["text"]


CALL_RE = re.compile(r"<tool_call>([\s\S]*?)</tool_call>")
ANSWER_RE = re.compile(r"<answer>([\s\S]*?)</answer>")


def parse_tool_call(text):
    m = CALL_RE.search(text)
    if not m:
        return None
    try:
        v = json.loads(m.group(1))
    except ValueError:
        return {"error": 'the tool call is not JSON: write <tool_call>{"name": ..., "arguments": {...}}</tool_call>'}
    if not isinstance(v, dict) or not isinstance(v.get("name"), str):
        return {"error": 'the tool call needs a "name"'}
    args = v.get("arguments")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return {"error": '"arguments" must be an object'}
    return {"name": v["name"], "arguments": args}


class LabEnvEpisode:
    """One episode at a time, its state kept as JSON, as the lab's JsEnv."""

    def __init__(self, spec):
        self.program = LabEnvProgram(spec)
        self.spec = spec
        self.max_turns = spec["max_turns"]

    def reset(self, seed):
        self.seed = seed & 0xFFFFFFFF
        r, _ = self.program.call("reset", {"seed": self.seed}, env_call_seed(self.seed, "reset", 0))
        self.state = r["state"]
        self.messages = r["messages"]
        self.view = {"seed": self.seed, "turn": 0, "turns": [], "calls": [], "answer": None, "text": ""}
        self.done = False
        self.tool_calls = 0
        self.total = 0.0
        self.success = False
        return self.messages

    def _tool(self, call):
        v = self.view
        if "error" in call:
            out = "Error: " + call["error"]
            v["calls"].append({"name": "", "arguments": None, "result": out, "ok": False})
        elif self.tool_calls >= self.spec["max_tool_calls"]:
            out = "Error: tool-call limit reached (%d calls)" % self.spec["max_tool_calls"]
            v["calls"].append({"name": call["name"], "arguments": call["arguments"], "result": out, "ok": False})
        else:
            self.tool_calls += 1
            try:
                payload = {"name": call["name"], "args": call["arguments"], "state": self.state}
                r, out = self.program.call("tool", payload, env_call_seed(self.seed, "tool", v["turn"]))
                self.state = r["state"]
                v["calls"].append({"name": call["name"], "arguments": call["arguments"], "result": r["result"], "ok": True})
            except EnvCallError as e:
                out = "Error: " + e.text()
                v["calls"].append({"name": call["name"], "arguments": call["arguments"], "result": out, "ok": False})
        return out

    def _step(self, text):
        try:
            payload = {"state": self.state, "text": text, "turn": self.view["turn"]}
            r, _ = self.program.call("step", payload, env_call_seed(self.seed, "step", self.view["turn"]))
            self.state = r["state"]
            return r["observation"], r["reward"], r["done"], r["valid"], None
        except EnvCallError as e:
            return "", 0, True, True, e.text()

    def step(self, text):
        """One model turn: (observation, reward, done, info), as the lab's StepResult."""
        if self.done:
            raise RuntimeError("step() after the episode ended")
        v = self.view
        v["turn"] += 1
        v["text"] = text
        answers = ANSWER_RE.findall(text)
        v["answer"] = answers[-1].strip() if answers else None
        observation, reward, done, valid, error = "", 0, False, True, None
        call = parse_tool_call(text) if self.spec["tools"] else None
        if call is not None:
            kind = "tool"
            valid = "error" not in call
            observation = "<tool_response>" + self._tool(call) + "</tool_response>"
        elif self.spec["multi_turn"]:
            kind = "step"
            observation, reward, done, valid, error = self._step(text)
        else:
            kind, done = "answer", True
        v["turns"].append({"text": text, "observation": observation, "kind": kind})
        truncated = not done and v["turn"] >= self.max_turns
        done = done or truncated
        success = False
        if done and error is None:
            try:
                c, _ = self.program.call("check", {"state": self.state, "episode": v}, env_call_seed(self.seed, "check", v["turn"]))
                success = c["success"]
                reward += c["score"]
            except EnvCallError as e:
                error = e.text()
        self.done = done
        self.total += reward
        self.success = success
        info = {"valid": valid, "success": success, "truncated": truncated, "steps": v["turn"], "kind": kind}
        if error is not None:
            info["error"] = error
        return observation, reward, done, info


    def end(self):
        """Ends the episode where it stands (the engine stopped it): check() scores it, as when
        the turn limit ends it. Returns the error text when check() failed, else None."""
        if self.done:
            return None
        self.done = True
        self.success = False
        try:
            c, _ = self.program.call("check", {"state": self.state, "episode": self.view}, env_call_seed(self.seed, "check", self.view["turn"]))
            self.success = c["success"]
            self.total += c["score"]
        except EnvCallError as e:
            return e.text()
        return None


def typed(method, params):
    """Gives a tool method taking **arguments the typed signature TRL builds its JSON schema from
    (transformers' get_json_schema reads inspect.signature and the annotations): params are
    (name, type, required); an argument named like a Python keyword ("from") is kept as named."""
    import inspect

    out = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for name, ty, required in params:
        hint = ty if required else (ty | None)
        p = inspect.Parameter("arg", inspect.Parameter.KEYWORD_ONLY, annotation=hint, default=inspect.Parameter.empty if required else None)
        p._name = name  # inspect.Parameter refuses keywords; the model's calls use the module's names
        out.append(p)
    method.__signature__ = inspect.Signature(out, return_annotation=str)
    method.__annotations__ = {**{n: (t if r else (t | None)) for n, t, r in params}, "return": str}
    return method


def hermes_call(name, arguments):
    """A tool call as the lab's model writes it (and TRL's Hermes parser reads it)."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


class LabTrlEnvironment:
    """The environment as TRL's GRPOTrainer(environment_factory=...) takes it: one instance per
    rollout; reset(**row) starts the episode of the row's seed (the prompt is the row's, the
    opening the lab's reset gave); each public method of a subclass is one of the environment's
    tools (train_trl.py writes them, typed, from the module's tools) and plays one model turn: the
    call as the model wrote it goes to the lab's step, so the tool-call limit, the turn limit and
    the errors are the lab's. The completion's last message (the answer turn) is played by
    lab_reward, which scores the episode: the sum of the step rewards and check()'s score."""

    SPEC = None  # env.json, set by train_trl.py
    WEIGHT = 1.0  # the reward term env's weight (rewards.terms; 1 when the run does not list it)

    def __init__(self):
        self.episode = LabEnvEpisode(self.SPEC)
        self.scored = None

    def reset(self, seed, **kwargs):
        self.episode.reset(int(seed))
        self.scored = None
        return None

    def _tool(self, name, arguments):
        if self.episode.done:
            return "Error: the episode has ended (turn limit %d)" % self.episode.max_turns
        observation, _, _, _ = self.episode.step(hermes_call(name, arguments))
        return observation[len("<tool_response>") : -len("</tool_response>")]

    def _finish(self, completion):
        """Plays the completion's final answer turn (when it is one) and scores the episode once."""
        if self.scored is None:
            last = completion[-1] if isinstance(completion, list) and completion else None
            text = completion if isinstance(completion, str) else None
            if last is not None and last.get("role") == "assistant" and not last.get("tool_calls"):
                text = last.get("content") or ""
                if last.get("reasoning_content"):
                    text = "<think>" + last["reasoning_content"] + "</think>\n" + text
            error = None
            if text is not None and not self.episode.done:
                _, _, _, info = self.episode.step(text)
                error = info.get("error")
            if not self.episode.done:
                # A tool call TRL left unrun (its iteration limit) or a malformed one: the engine
                # ended the episode before the environment did.
                error = self.episode.end()
            calls = self.episode.view["calls"]
            self.scored = {
                "reward": float(self.episode.total),
                "success": bool(self.episode.success),
                "valid_call": any(c["ok"] for c in calls),
                "error": error,
            }
        return self.scored


def lab_reward(prompts, completions, environments, **kwargs):
    """The episode's return (the lab's reward term `env`)."""
    return [e.WEIGHT * e._finish(c)["reward"] for c, e in zip(completions, environments)]


def lab_acc(prompts, completions, environments, **kwargs):
    """check()'s success (weight 0: logged): the lab's val/acc."""
    return [float(e._finish(c)["success"]) for c, e in zip(completions, environments)]


def lab_valid_call(prompts, completions, environments, **kwargs):
    """1 when a tool call ran without error (weight 0): the lab's valid_call_rate."""
    return [float(e._finish(c)["valid_call"]) for c, e in zip(completions, environments)]
