# lab_tools.py: the lab run's tools as verl tools, written by `npm run export -- verl`
# (agentic-rl-lab). Both are verl native tools (verl.tools.base_tool.BaseTool) that run the
# task's JavaScript through lab_node.py, on the runner the tool config names (runner:
# sandbox_fusion in tool_config.yaml, the cluster default; node in tool_config_node.yaml, a
# local node; bash run.sh --tools node):
#   LabCodeTool      the lab's code tool. The lab's QuickJS tool returns the value of the
#                    code's last expression; lab_node.py wraps the code to print that value as
#                    the lab formats it. The task's character check (the calculator's
#                    [0-9+\-*() ]) runs first.
#   LabFunctionTool  a function-calling tool: its JS body runs with the JSON arguments as
#                    `args`, and its return value is printed the same way.
# A failed call (an exception, a timeout, a refused input) shows its error's last line, as
# in the lab. Each call returns its status as the tool reward (1.0 success, 0.0 failure),
# which verl passes to reward.py as extra_info["tool_rewards"] for the tool-use reward terms.
# Needs verl installed and this folder on PYTHONPATH (run.sh sets it).
import asyncio
import re

from lab_node import function_source, node_source, run_program
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse


class LabCodeTool(BaseTool):
    def __init__(self, config, tool_schema):
        super().__init__(config, tool_schema)
        self.runner = config.get("runner", "sandbox_fusion")
        if self.runner not in ("sandbox_fusion", "node"):
            raise ValueError("tool config: runner is sandbox_fusion or node, not " + repr(self.runner))
        self.url = config.get("sandbox_fusion_url")
        self.timeout = config.get("default_timeout", 5)
        self.memory_mb = config.get("memory_limit_mb", 512)
        allowed = config.get("allowed_chars")
        self.allowed = re.compile("[" + allowed + "]*") if allowed else None

    def program(self, parameters):
        code = parameters.get("code", "")
        if not isinstance(code, str):
            code = str(code)
        if self.allowed is not None and self.allowed.fullmatch(code) is None:
            return None
        return node_source(code)

    def run(self, parameters):
        """(text, ok) of one call, synchronously."""
        source = self.program(parameters)
        if source is None:
            return "SyntaxError", False
        return run_program(self.runner, source, self.timeout, self.memory_mb, self.url)

    async def execute(self, instance_id, parameters, **kwargs):
        text, ok = await asyncio.to_thread(self.run, parameters)
        return ToolResponse(text=text), 1.0 if ok else 0.0, {}


class LabFunctionTool(LabCodeTool):
    def __init__(self, config, tool_schema):
        super().__init__(config, tool_schema)
        self.body = config["body"]

    def program(self, parameters):
        return function_source(self.body, parameters)
