# reward.py: the lab run's reward, written by `npm run export` (agentic-rl-lab).
# For TRL: train_trl.py's reward functions call compute_score once per completion, with each
# call's status (the tool messages of the completion) as extra_info["tool_rewards"].
# compute_score(data_source, solution_str, ground_truth, extra_info) computes the same reward
# terms, weights and options as the lab run (rl/algos/reward-terms.ts, rl/rollout/batch-rewards.ts) on the same
# facts: the response text, the task's verifier on the strict final answer, and each tool
# call's status (extra_info["tool_rewards"]: 1.0 success, 0.0 failure, one per executed call).
# Python standard library only. Its parity with the lab is tested by export/export.test.ts
# (`npx vitest run --project unit export/`). Also a command line, for checking by hand:
#   python3 reward.py < rows.jsonl   (one {data_source, solution_str, ground_truth, extra_info}
#   per line; prints one JSON result per line)
import json
import math
import re
import sys

LAB_REWARD = json.loads("{\"terms\":[{\"name\":\"correctness\",\"weight\":1,\"options\":{\"pos\":1,\"neg\":0}}],\"verifier\":\"integer\"}")

# JavaScript's String.prototype.trim and \s: these characters, not Python's str.strip set.
_WS = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_WSC = "[" + re.escape(_WS) + "]"

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"


def js_trim(s):
    return s.strip(_WS)


# ---------------------------------------------------------------- JSON as JavaScript sees it


def _reject_constant(name):
    raise ValueError("not JSON: " + name)


def _js_int(s):
    v = int(s)
    return v if abs(v) <= 2**53 else float(s)


def js_json_parse(text):
    """JSON.parse: NaN/Infinity are errors, big integers are doubles."""
    return json.loads(text, parse_constant=_reject_constant, parse_int=_js_int)


def js_number(v):
    """Number.prototype.toString for a finite double (JSON.stringify's number form)."""
    if isinstance(v, bool):
        raise TypeError("bool is not a number")
    if isinstance(v, int):
        v = float(v) if abs(v) > 2**53 else v
        if isinstance(v, int):
            return str(v)
    if v != v or v in (float("inf"), float("-inf")):
        return "null"
    if v == 0:
        return "0"
    r = repr(v)
    sign = "-" if r.startswith("-") else ""
    r = r.lstrip("-")
    if "e" in r:
        mant, exp = r.split("e")
        exp = int(exp)
    else:
        mant, exp = r, 0
    if "." in mant:
        ip, fp = mant.split(".")
    else:
        ip, fp = mant, ""
    if fp == "0":
        fp = ""
    digits = (ip + fp).lstrip("0")
    # position of the decimal point relative to the start of `digits`
    lead_zeros = len(ip + fp) - len((ip + fp).lstrip("0"))
    point = len(ip) + exp - lead_zeros
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    n = point
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        es = ("+" if e >= 0 else "-") + str(abs(e))
        out = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + es
    return sign + out


def _utf16_key(s):
    return s.encode("utf-16-be", "surrogatepass")


def canonical_json(v):
    """The lab's canonicalJson: JSON with object keys sorted (by UTF-16 code units, as JS sorts)."""
    if isinstance(v, list):
        return "[" + ",".join(canonical_json(x) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v.keys(), key=_utf16_key)
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canonical_json(v[k]) for k in keys) + "}"
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return js_number(v)
    return json.dumps(v, ensure_ascii=False)


def deep_equal(a, b):
    """The lab's deepEqual on JSON values (true is not 1, 1.0 is 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) != isinstance(b, list):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(deep_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return len(a) == len(b) and all(k in b and deep_equal(a[k], b[k]) for k in a)
    return False


# ---------------------------------------------------------------- transcript


_TURN = re.compile(
    r"(?:<\|im_end\|>)?" + _WSC + r"*(?:<\|im_start\|>)?user\n"
    r"((?:" + _WSC + r"*<tool_response>.*?</tool_response>)+)"
    r"(?:<\|im_end\|>)?" + _WSC + r"*(?:<\|im_start\|>)?assistant\n",
    re.DOTALL,
)
_RESP = re.compile(r"<tool_response>(.*?)</tool_response>", re.DOTALL)


def _unwrap(content):
    # Qwen-style templates write "<tool_response>\n{content}\n</tool_response>".
    if len(content) >= 2 and content.startswith("\n") and content.endswith("\n"):
        return content[1:-1]
    return content


def lab_transcript(text):
    """
    The lab's chatml-turns form of a response: verl decodes without special tokens
    ("...</tool_call>user\n<tool_response>\n..\n</tool_response>\nassistant\n..."), the lab
    keeps them ("...</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>..</tool_response>
    <|im_end|>\n<|im_start|>assistant\n..."). Text already in the lab's form is unchanged.
    """

    def turn(m):
        responses = [_unwrap(c) for c in _RESP.findall(m.group(1))]
        body = "\n".join("<tool_response>" + c + "</tool_response>" for c in responses)
        return IM_END + "\n" + IM_START + "user\n" + body + IM_END + "\n" + IM_START + "assistant\n"

    return _TURN.sub(turn, text)


# ---------------------------------------------------------------- final answer and verifiers


def _blank_env(text):
    """Tool responses are environment text: blank them (same length) as the lab's envSpans does."""
    out = []
    pos = 0
    while True:
        s = text.find("<tool_response>", pos)
        if s < 0:
            break
        e = text.find("</tool_response>", s + len("<tool_response>"))
        end = len(text) if e < 0 else e + len("</tool_response>")
        out.append(text[pos:s])
        out.append(" " * (end - s))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _rest_is_end(rest, markers):
    r = js_trim(rest)
    for m in markers:
        if r.startswith(m):
            r = js_trim(r[len(m) :])
            break
    return len(r) == 0


def strict_answer(text):
    """The lab's parseAnswer(text, {mode: "strict", endMarkers: ["<|im_end|>"]}): the answer or None."""
    t = _blank_env(text)
    opens = t.count("<answer>")
    if opens == 0:
        return None
    s = t.find("<answer>")
    cs = s + len("<answer>")
    e = t.find("</answer>", cs)
    if e < 0:
        return None
    content = t[cs:e]
    if "<answer>" in content:
        return None
    end = e + len("</answer>")
    if opens > 1 or t.count("</answer>") > 1:
        return None
    if not _rest_is_end(t[end:], [IM_END]):
        return None
    return js_trim(content)


def parse_number(text):
    cleaned = re.sub(r"([0-9]),(?=[0-9]{3}\b)", r"\1", text, flags=re.ASCII)
    matches = re.findall(r"-?[0-9]+(?:\.[0-9]+)?", cleaned)
    if len(matches) != 1:
        return None
    v = float(matches[0])
    return v if math.isfinite(v) else None


def _js_number_of(s):
    try:
        return float(js_trim(s)) if js_trim(s) else 0.0
    except ValueError:
        return float("nan")


def verify_numeric(reference, answer, atol=1e-9, rtol=0.0):
    if answer is None:
        return False
    ref = _js_number_of(reference)
    got = parse_number(answer)
    if got is None:
        return False
    return abs(ref - got) <= atol + rtol * abs(ref)


def verify_integer(reference, answer):
    if answer is None:
        return False
    text = js_trim(answer)
    if re.fullmatch(r"-?[0-9]+", text) is None:
        return False
    return int(text) == int(reference)


VERIFIERS = {"integer": verify_integer, "numeric": verify_numeric}


# ---------------------------------------------------------------- reward terms (rl/algos/reward-terms.ts)


def _num(o, key, fallback):
    v = o.get(key)
    if v is None:
        return fallback
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError("reward option " + key + " must be a finite number")
    return v


def _bool(o, key, fallback):
    return fallback if key not in o else o[key] is True


_TAG = re.compile(r"<(/?)(think|answer|tool_call|tool_response)>")


def has_answer_format(text, require_think=False):
    tags = [(m.group(1) == "/", m.group(2), m.end()) for m in _TAG.finditer(text)]
    if len(tags) % 2 != 0:
        return False
    answers = 0
    thinks = 0
    for i in range(0, len(tags), 2):
        a, b = tags[i], tags[i + 1]
        if a[0] or not b[0] or a[1] != b[1]:
            return False
        if a[1] == "answer":
            answers += 1
        if a[1] == "think":
            thinks += 1
    if answers != 1 or tags[-1][1] != "answer":
        return False
    if require_think and thinks == 0:
        return False
    return re.fullmatch(_WSC + r"*(?:<\|im_end\|>)?" + _WSC + r"*", text[tags[-1][2] :]) is not None


def multiset_jaccard(a, b):
    if len(a) == len(b) and all(x == y for x, y in zip(a, b)):
        return 1
    if len(a) == 0 or len(b) == 0:
        return 0
    ca, cb = {}, {}
    for v in a:
        ca[v] = ca.get(v, 0) + 1
    for v in b:
        cb[v] = cb.get(v, 0) + 1
    inter = 0
    for k, n in ca.items():
        inter += min(n, cb.get(k, 0))
    return inter / (len(a) + len(b) - inter)


def toolrl_call_score(gt, pred):
    if deep_equal(gt, pred):
        return 1
    score = multiset_jaccard([g["name"] for g in gt], [p["name"] for p in pred])
    s_max = 1
    used = set()
    for g in gt:
        g_keys = list(g["params"].keys())
        s_max += 1 + len(g_keys)
        best = 0
        best_idx = -1
        for i, p in enumerate(pred):
            if i in used or p["name"] != g["name"]:
                continue
            s = multiset_jaccard(g_keys, list(p["params"].keys())) + len(
                [k for k in g_keys if k in p["params"] and deep_equal(p["params"][k], g["params"][k])]
            )
            if s > best:
                best = s
                best_idx = i
        if best_idx >= 0:
            used.add(best_idx)
            score += best
    return score / s_max


def _parse_toolrl_calls(text):
    open_ = text.find("<tool_call>")
    close = text.find("</tool_call>", open_) if open_ >= 0 else -1
    if open_ < 0 or close < 0:
        return None
    lines = js_trim(text[open_ + len("<tool_call>") : close]).split("\n")
    calls = []
    for line in lines:
        try:
            v = js_json_parse(line)
        except ValueError:
            return None
        if not isinstance(v, dict):
            return None
        params = v.get("parameters")
        if params is None:
            params = v.get("arguments")
        if not isinstance(v.get("name"), str) or not isinstance(params, dict):
            return None
        calls.append({"name": v["name"], "params": params})
    return calls


def toolrl_turn(text):
    resp = text.find("<tool_response>")
    if resp < 0:
        return text
    close = text.rfind("</tool_call>", 0, resp)
    return text[:resp] if close < 0 else text[: close + len("</tool_call>")]


def toolrl_ranges(step, schedule):
    if not schedule:
        return {"format": (0, 1), "correct": (-3, 3)}
    return {
        "format": (min(-1, -2 + (2 * step) / 150), max(1, 2 - step / 150)),
        "correct": (max(-3, -2 - step / 150), min(3, 2 + step / 150)),
    }


def toolrl(x, o):
    gt = [{"name": c["name"], "params": c.get("arguments") or {}} for c in (x["gt_calls"] or [])]
    has_call = len(gt) > 0
    has_response = _bool(o, "gtHasResponse", not has_call)
    ranges = toolrl_ranges(x["step"], _bool(o, "schedule", False))
    t = toolrl_turn(x["text"])

    def once(tag):
        return t.count("<" + tag + ">") == 1 and t.count("</" + tag + ">") == 1

    def full(p):
        return re.fullmatch(p, t, re.DOTALL) is not None

    if has_response and not has_call:
        ok = full(r"<think>.*?</think>\n<response>.*?</response>") and once("response")
    elif not has_response and has_call:
        ok = full(r"<think>.*?</think>\n<tool_call>\n.*?\n</tool_call>") and once("tool_call")
    elif has_response and has_call:
        ok = (
            full(r"<think>.*?</think>\n<tool_call>\n.*?\n</tool_call>\n<response>.*?</response>")
            and once("tool_call")
            and once("response")
        )
    else:
        ok = full(r"<think>.*?</think>")
    fmt = ranges["format"][1] if ok else ranges["format"][0]
    correct = 0
    if has_call:
        pred = _parse_toolrl_calls(t)
        lo, hi = ranges["correct"]
        correct = lo if pred is None else (hi - lo) * toolrl_call_score(gt, pred) + lo
    return fmt + correct


def otc_ppo_tool_reward(m, c):
    return math.cos((m * math.pi) / (2 * m + c))


def tool_n1(x, o):
    marker = "<|im_start|>assistant"
    t = x["text"][x["text"].rfind(marker) :] if marker in x["text"] else x["text"]
    gold = x["gt_calls"] or []
    has_think = "<think>" in t and "</think>" in t
    open_ = t.rfind("<tool_call>")
    close = t.find("</tool_call>", open_) if open_ >= 0 else -1
    if open_ < 0 or close < 0:
        return 1 if has_think and len(gold) == 0 and _bool(o, "emptyGoldMatchesNoCall", True) else 0
    try:
        parsed = js_json_parse(js_trim(t[open_ + len("<tool_call>") : close]))
    except ValueError:
        return 0
    items = parsed if isinstance(parsed, list) else [parsed]
    well_formed = all(isinstance(c, dict) and "name" in c and "arguments" in c for c in items)
    if not has_think or not well_formed:
        return 0

    def key(c):
        return canonical_json(c["name"]) + "|" + canonical_json(c.get("arguments", {}))

    a = sorted((key(c) for c in items), key=_utf16_key)
    b = sorted((key({"name": c["name"], "arguments": c.get("arguments") or {}}) for c in gold), key=_utf16_key)
    return 1 if a == b else 0


def _calls(x, name):
    if x["tool_ok"] is None:
        raise ValueError(
            name + ' needs each tool call\'s status: extra_info["tool_rewards"] (the tools of lab_tools.py report it)'
        )
    return x["tool_ok"]


TERMS = {
    "correctness": lambda x, o: _num(o, "pos", 1) if x["correct"] else _num(o, "neg", 0),
    "format": lambda x, o: _num(o, "pos", 1)
    if has_answer_format(x["text"], _bool(o, "requireThink", False))
    else _num(o, "neg", 0),
    "torl-exec-penalty": lambda x, o: -_num(o, "penalty", 0.5)
    if any(not ok for ok in _calls(x, "torl-exec-penalty"))
    else 0,
    "toolrl": toolrl,
    "otc-ppo": lambda x, o: _num(o, "alpha", 1) * otc_ppo_tool_reward(len(_calls(x, "otc-ppo")), _num(o, "c", 1))
    if x["correct"]
    else 0,
    "artist-tool-exec": lambda x, o: _num(o, "zeroCalls", 0)
    if len(_calls(x, "artist-tool-exec")) == 0
    else len([ok for ok in x["tool_ok"] if ok]) / len(x["tool_ok"]),
    "tool-n1": tool_n1,
}


def _tool_ok(extra_info):
    rewards = extra_info.get("tool_rewards")
    if rewards is None:
        return None
    return [float(r) >= 0.5 for r in list(rewards)]


def _gt_calls(extra_info):
    raw = extra_info.get("gt_calls")
    if raw is None or raw == "":
        return None
    calls = json.loads(raw) if isinstance(raw, str) else raw
    return [{"name": c["name"], "arguments": c.get("arguments") or {}} for c in calls]


def score_terms(solution_str, ground_truth, extra_info, spec=None):
    """The lab's weighted reward terms for one response: (total, correct, {term: value})."""
    spec = spec or LAB_REWARD
    extra_info = extra_info or {}
    text = lab_transcript(solution_str)
    verifier = VERIFIERS.get(spec["verifier"])
    if verifier is None:
        raise ValueError("unknown verifier " + repr(spec["verifier"]))
    correct = bool(verifier(str(ground_truth), strict_answer(text)))
    x = {
        "text": text,
        "correct": correct,
        "tool_ok": _tool_ok(extra_info),
        "gt_calls": _gt_calls(extra_info),
        "step": 0,
    }
    total = 0
    values = {}
    for term in spec["terms"]:
        fn = TERMS.get(term["name"])
        if fn is None:
            raise ValueError("reward term " + repr(term["name"]) + " is not exported")
        v = fn(x, term.get("options") or {})
        values[term["name"]] = v
        total += term["weight"] * v
    return total, correct, values


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    total, correct, values = score_terms(solution_str, ground_truth, extra_info)
    out = {"score": float(total), "acc": 1.0 if correct else 0.0}
    for name, v in values.items():
        out["reward/" + name] = float(v)
    return out


if __name__ == "__main__":
    for line in sys.stdin:
        if not line.strip():
            continue
        row = json.loads(line)
        spec = row.get("spec")
        total, correct, values = score_terms(
            row["solution_str"], row["ground_truth"], row.get("extra_info"), spec
        )
        print(json.dumps({"score": total, "correct": correct, "terms": values}))
