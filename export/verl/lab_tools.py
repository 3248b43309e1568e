# lab_tools.py: the lab run's tools as verl tools, written by `npm run export` (agentic-rl-lab).
# Both run JavaScript in Sandbox Fusion (language nodejs) through verl's SandboxFusionTool:
#   LabCodeTool      the lab's code tool. The lab's QuickJS tool returns the value of the
#                    code's last expression; Sandbox Fusion returns stdout. So the code is
#                    wrapped: Node evaluates it with vm.runInThisContext (whose result is the
#                    completion value, as eval's) and prints that value as the lab formats it
#                    (strings as they are, anything else as JSON, after any console output).
#                    The task's character check (the calculator's [0-9+\-*() ]) runs first.
#   LabFunctionTool  a function-calling tool: its JS body runs with the JSON arguments as
#                    `args`, and its return value is printed the same way.
# A failed call (an exception, a timeout, a refused input) shows its error's last line, as
# in the lab. Each call returns its status as the tool reward (1.0 success, 0.0 failure),
# which verl passes to reward.py as extra_info["tool_rewards"] for the tool-use reward terms.
# Needs verl installed and this folder on PYTHONPATH (run.sh sets it); lab_node.py holds the
# Node.js wrapper both this file and the TRL script use.
import re

from lab_node import function_source, last_line, node_source
from verl.tools.sandbox_fusion_tools import SandboxFusionTool
from verl.tools.schemas import ToolResponse
from verl.utils.reward_score.sandbox_fusion.utils import _process_single_case

class LabCodeTool(SandboxFusionTool):
    def __init__(self, config, tool_schema):
        super().__init__(config, tool_schema)
        allowed = config.get("allowed_chars")
        self.allowed = re.compile("[" + allowed + "]*") if allowed else None

    def program(self, parameters):
        code = parameters.get("code", "")
        if not isinstance(code, str):
            code = str(code)
        if self.allowed is not None and self.allowed.fullmatch(code) is None:
            return None
        return node_source(code)

    async def execute(self, instance_id, parameters, **kwargs):
        source = self.program(parameters)
        if source is None:
            return ToolResponse(text="SyntaxError"), 0.0, {}
        timeout = self.default_timeout
        result = await self.execution_pool.execute.remote(self.run_node, source, timeout)
        if result is None:
            return ToolResponse(text="SandboxError: the sandbox did not answer"), 0.0, {}
        text, ok = result
        return ToolResponse(text=text), 1.0 if ok else 0.0, {}

    def run_node(self, source, timeout):
        _, meta = _process_single_case(
            0, None, None, self.sandbox_fusion_url, source, timeout, self.memory_limit_mb, "nodejs"
        )
        stdout = meta.get("stdout") or ""
        stderr = meta.get("stderr") or ""
        if meta.get("run_status") == "Finished" and meta.get("exit_code") == 0:
            return stdout.rstrip(), True
        if meta.get("run_status") == "TimeLimitExceeded":
            return "TimeoutError: the tool call ran out of time", False
        return last_line(stderr or stdout or str(meta.get("status") or "Error")), False


class LabFunctionTool(LabCodeTool):
    def __init__(self, config, tool_schema):
        super().__init__(config, tool_schema)
        self.body = config["body"]

    def program(self, parameters):
        return function_source(self.body, parameters)
