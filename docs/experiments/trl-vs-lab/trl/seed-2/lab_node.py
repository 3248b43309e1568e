# lab_node.py: how the lab's JavaScript tools run outside the lab, written by `npm run export`
# (agentic-rl-lab).
# For TRL: train_trl.py's tool functions run their programs here (train_trl.py --tools).
# Standard library only. Two runners take the same program:
#   run_sandbox_fusion  POSTs it to Sandbox Fusion's run_code (language nodejs): the cluster default
#   run_local_node      runs it in a local `node` (on PATH, or $LAB_NODE), one process per call,
#                       for a machine without a sandbox server (and the lab's engine tests)
# The lab's QuickJS tool returns the value of the code's last expression, while Node prints
# stdout. So the code is wrapped: Node evaluates it with vm.runInThisContext (whose result is
# the completion value, as eval's) and prints that value as the lab's formatter does (a string
# as it is, anything else as JSON, after any console output); an exception prints
# `Name: message` to stderr and fails the call.
import json
import os
import subprocess
import urllib.request

NODE_WRAPPER = """
const __lab_vm = require("vm");
const __lab_ms = Number(process.env.LAB_TOOL_TIMEOUT_MS) || undefined;
try {
  const __lab_value = __lab_vm.runInThisContext(%s, { filename: "tool.js", timeout: __lab_ms });
  if (__lab_value !== undefined) {
    process.stdout.write((typeof __lab_value === "string" ? __lab_value : JSON.stringify(__lab_value)) + "\\n");
  }
} catch (e) {
  const msg =
    e && e.code === "ERR_SCRIPT_EXECUTION_TIMEOUT"
      ? "TimeoutError: the tool call ran out of time"
      : e && typeof e === "object" && "name" in e ? e.name + ": " + e.message : String(e);
  process.stderr.write(msg + "\\n");
  process.exitCode = 1;
}
"""


def node_source(code):
    """The Node.js program that runs `code` and prints its last expression's value."""
    return NODE_WRAPPER % json.dumps(code)


def function_source(body, args):
    """A function-calling tool: its JS body runs with the JSON arguments as `args`."""
    return node_source("(function (args) {\n" + body + "\n})(" + json.dumps(args) + ")")


def last_line(text):
    lines = [line.strip() for line in text.split("\n") if line.strip() != ""]
    return lines[-1] if lines else "Error"


def run_sandbox_fusion(url, source, timeout_s, memory_mb):
    """POST one program to Sandbox Fusion's run_code; returns (text the model sees, ok)."""
    req = json.dumps(
        {"code": source, "language": "nodejs", "run_timeout": timeout_s, "memory_limit_MB": memory_mb}
    ).encode()
    request = urllib.request.Request(url, data=req, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s + 30) as r:
            res = json.loads(r.read().decode())
    except Exception as e:  # the model sees a failed call, never an exception
        return "SandboxError: " + str(e), False
    run = res.get("run_result") or {}
    stdout = run.get("stdout") or ""
    stderr = run.get("stderr") or ""
    if run.get("status") == "Finished" and run.get("return_code") == 0:
        return stdout.rstrip(), True
    if run.get("status") == "TimeLimitExceeded":
        return "TimeoutError: the tool call ran out of time", False
    return last_line(stderr or stdout or str(res.get("message") or res.get("status") or "Error")), False


# Seconds a local node may take to start, on top of the call's own limit: the limit is the
# program's (vm's timeout, as the lab's QuickJS limit and Sandbox Fusion's run_timeout), and a
# machine busy training can take longer than the lab's 1 s to start a process.
NODE_START_S = 20


def run_local_node(source, timeout_s, memory_mb):
    """Runs one program in a local node; returns (text the model sees, ok), as run_sandbox_fusion."""
    node = os.environ.get("LAB_NODE", "node")
    env = dict(os.environ, LAB_TOOL_TIMEOUT_MS=str(int(timeout_s * 1000)))
    try:
        r = subprocess.run(
            [node, "--max-old-space-size=" + str(int(memory_mb)), "-"],
            input=source,
            capture_output=True,
            text=True,
            timeout=timeout_s + NODE_START_S,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return "TimeoutError: the tool call ran out of time", False
    except OSError as e:  # no node: the model sees a failed call, never an exception
        return "SandboxError: " + str(e), False
    if r.returncode == 0:
        return r.stdout.rstrip(), True
    return last_line(r.stderr or r.stdout or "Error"), False


def run_program(runner, source, timeout_s, memory_mb, url=None):
    """One program on the named runner: "sandbox_fusion" (url: its run_code endpoint) or "node"."""
    if runner == "node":
        return run_local_node(source, timeout_s, memory_mb)
    if runner == "sandbox_fusion":
        return run_sandbox_fusion(url, source, timeout_s, memory_mb)
    raise ValueError("tool runner: sandbox_fusion or node, not " + repr(runner))
