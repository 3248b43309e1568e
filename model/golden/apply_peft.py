# A PEFT LoRA adapter applied to its base model by PyTorch, independently of the TypeScript:
# the base is the folder adapter_config.json's base_model_name_or_path names (as PEFT's
# PeftModel.from_pretrained finds it; --base overrides), its safetensors (one file or shards,
# F32/BF16/F16) read here, each target's weight merged by PEFT's rule W + (lora_alpha / r) B A
# (rank_pattern / alpha_pattern per module where given), and the network run by
# make_hf_models.py's forward (written from the architectures) in float64.
# Run with Debian's torch:
#   /usr/bin/python3 model/golden/apply_peft.py ADAPTER_DIR [--base DIR] < tokens.json > logp.json
# stdin: {"tokens": [[id, ...], ...]}; stdout: {"base": the folder used, "logp": [[log p(token
# t+1 | tokens <= t), ...], ...]}. Used by export/pretrained-export.test.ts, which checks the
# lab's log-probs of base + adapter against it (live when torch is here) and against the
# committed model/golden/peft-llama/logp.json, made from that folder's adapter (the test's
# seeded adapter on model/golden/hf/llama, exported by npm run export -- peft; the test checks
# its export is those bytes):
#   /usr/bin/python3 model/golden/apply_peft.py model/golden/peft-llama \
#     < model/golden/peft-llama/tokens.json > model/golden/peft-llama/logp.json
import argparse
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_hf_models import forward  # noqa: E402

DTYPES = {"F32": (torch.float32, 4), "BF16": (torch.bfloat16, 2), "F16": (torch.float16, 2)}


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        dt, size = DTYPES[e["dtype"]]
        a, b = e["data_offsets"]
        buf = bytearray(raw[8 + n + a : 8 + n + b])
        t = torch.frombuffer(buf, dtype=dt) if len(buf) else torch.zeros(0, dtype=dt)
        out[name] = t.reshape(e["shape"]).to(torch.float64)
    return out


def read_model(folder):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    index = os.path.join(folder, "model.safetensors.index.json")
    P = {}
    if os.path.exists(index):
        with open(index) as f:
            for shard in sorted(set(json.load(f)["weight_map"].values())):
                P.update(read_safetensors(os.path.join(folder, shard)))
    else:
        P.update(read_safetensors(os.path.join(folder, "model.safetensors")))
    return cfg, P


def merge_adapter(P, adapter_dir):
    with open(os.path.join(adapter_dir, "adapter_config.json")) as f:
        ac = json.load(f)
    T = read_safetensors(os.path.join(adapter_dir, "adapter_model.safetensors"))
    prefix = "base_model.model."
    merged = 0
    for name in T:
        if not name.endswith(".lora_A.weight"):
            continue
        module = name[len(prefix) : -len(".lora_A.weight")]
        A, B = T[name], T[name.replace("lora_A", "lora_B")]
        short = module.split(".")[-1]
        r = ac.get("rank_pattern", {}).get(short, ac["r"])
        alpha = ac.get("alpha_pattern", {}).get(short, ac["lora_alpha"])
        W = P[module + ".weight"]
        assert B.shape[0] == W.shape[0] and A.shape[1] == W.shape[1], f"{module}: adapter shape"
        P[module + ".weight"] = W + (alpha / r) * (B @ A)
        merged += 1
    return ac, merged


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("adapter")
    ap.add_argument("--base", help="the base model folder (default: adapter_config.json's base_model_name_or_path)")
    args = ap.parse_args()
    with open(os.path.join(args.adapter, "adapter_config.json")) as f:
        base = args.base or json.load(f)["base_model_name_or_path"]
    cfg, P = read_model(base)
    _, merged = merge_adapter(P, args.adapter)
    if merged == 0:
        sys.exit("the adapter has no lora_A tensors")
    tokens = torch.tensor(json.load(sys.stdin)["tokens"], dtype=torch.long)
    logits = forward(cfg, P, tokens)  # (B,T,V) float64
    logp = logits.log_softmax(-1)[:, :-1].gather(-1, tokens[:, 1:, None])[..., 0]
    json.dump({"base": base, "merged": merged, "logp": logp.tolist()}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
