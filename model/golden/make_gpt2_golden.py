# Scores the GPT-2 export fixture (model/golden/gpt2/, written by export_gpt2_fixture.ts) with a
# GPT-2 forward written here from the architecture (Radford et al. 2019 / transformers'
# GPT2LMHeadModel: Conv1D linears y = x W + b with W (in, out), pre-LayerNorm, gelu_new,
# learned positions, head tied to wte), and the PEFT adapter applied by PEFT's LoRA rule for
# Conv1D (fan_in_fan_out): W' = W + (alpha'/r') (B A)^T per module, with rank_pattern /
# alpha_pattern. Independent of the TS code; reads safetensors with the stdlib.
# Run with Debian's torch:  /usr/bin/python3 model/golden/make_gpt2_golden.py
# Writes model/golden/gpt2/golden.bin (the GLRL format of make_golden.py: u32 magic 0x4C524C47,
# u32 version 1, u32 json length, JSON header, padding to 4, data): tokens, targets (B,T) and
# the log-probs of the targets under the base, base + PEFT adapter, and the merged model.
# Checked by model/hf/write.test.ts.
import json
import math
import os
import re
import struct

import torch
import torch.nn.functional as F

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpt2")
MAGIC, VERSION = 0x4C524C47, 1
B, T = 2, 9


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert e["dtype"] == "F32", (name, e["dtype"])
        a, b = e["data_offsets"]
        buf = bytearray(raw[8 + n + a:8 + n + b])
        out[name] = torch.frombuffer(buf, dtype=torch.float32).reshape(e["shape"]).clone()
    return out


def gpt2_logits(cfg, W, tokens):
    C, L, NH = cfg["n_embd"], cfg["n_layer"], cfg["n_head"]
    hs = C // NH
    Tn = tokens.shape[1]
    eps = cfg["layer_norm_epsilon"]
    x = W["transformer.wte.weight"][tokens] + W["transformer.wpe.weight"][torch.arange(Tn)][None]
    causal = torch.tril(torch.ones(Tn, Tn, dtype=torch.bool))
    for l in range(L):
        p = f"transformer.h.{l}."
        h = F.layer_norm(x, (C,), W[p + "ln_1.weight"], W[p + "ln_1.bias"], eps)
        qkv = h @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]  # Conv1D: (in, out)
        q, k, v = qkv.split(C, dim=-1)
        q, k, v = (t.view(t.shape[0], Tn, NH, hs).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(x.shape[0], Tn, C)
        x = x + y @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
        h = F.layer_norm(x, (C,), W[p + "ln_2.weight"], W[p + "ln_2.bias"], eps)
        a = h @ W[p + "mlp.c_fc.weight"] + W[p + "mlp.c_fc.bias"]
        a = 0.5 * a * (1 + torch.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))  # gelu_new
        x = x + a @ W[p + "mlp.c_proj.weight"] + W[p + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (C,), W["transformer.ln_f.weight"], W["transformer.ln_f.bias"], eps)
    return x @ W["transformer.wte.weight"].T


def apply_peft(W, acfg, A):
    W = {k: v.clone() for k, v in W.items()}
    for name in A:
        m = re.match(r"base_model\.model\.(.*)\.lora_A\.weight$", name)
        if not m:
            continue
        mod = m.group(1)
        a, b = A[name], A[f"base_model.model.{mod}.lora_B.weight"]
        r, alpha = acfg["r"], acfg["lora_alpha"]
        for key, rr in acfg.get("rank_pattern", {}).items():
            if re.match(rf"(.*\.)?({key})$", mod):
                r = rr
        for key, aa in acfg.get("alpha_pattern", {}).items():
            if re.match(rf"(.*\.)?({key})$", mod):
                alpha = aa
        assert a.shape[0] == r and b.shape[1] == r, (mod, a.shape, b.shape, r)
        delta = (b @ a) * (alpha / r)  # (out, in)
        W[mod + ".weight"] = W[mod + ".weight"] + (delta.T if acfg["fan_in_fan_out"] else delta)
    return W


cfg = json.load(open(os.path.join(HERE, "base", "config.json")))
base = read_safetensors(os.path.join(HERE, "base", "model.safetensors"))
merged = read_safetensors(os.path.join(HERE, "merged", "model.safetensors"))
acfg = json.load(open(os.path.join(HERE, "peft", "adapter_config.json")))
adapter = read_safetensors(os.path.join(HERE, "peft", "adapter_model.safetensors"))
assert acfg["peft_type"] == "LORA" and all(k.startswith("base_model.model.transformer.h.") for k in adapter)

g = torch.Generator().manual_seed(5)
tokens = torch.randint(0, cfg["vocab_size"], (B, T), generator=g)
targets = torch.randint(0, cfg["vocab_size"], (B, T), generator=g)


def logp(W):
    with torch.no_grad():
        return gpt2_logits(cfg, W, tokens).log_softmax(-1).gather(-1, targets[..., None])[..., 0]


tensors = [("tokens", "i32", tokens.int()), ("targets", "i32", targets.int()), ("logp_base", "f32", logp(base)),
           ("logp_peft", "f32", logp(apply_peft(base, acfg, adapter))), ("logp_merged", "f32", logp(merged))]
entries, blobs, off = {}, [], 0
for name, dt, t in tensors:
    arr = t.contiguous().reshape(-1)
    entries[name] = {"dtype": dt, "shape": list(t.shape), "offset": off}
    blobs.append(arr.numpy().astype("<i4" if dt == "i32" else "<f4").tobytes())
    off += arr.numel()
header = json.dumps({"B": B, "T": T, "tensors": entries}).encode()
out = os.path.join(HERE, "golden.bin")
with open(out, "wb") as f:
    f.write(struct.pack("<III", MAGIC, VERSION, len(header)))
    f.write(header + b"\0" * ((4 - len(header) % 4) % 4))
    for b_ in blobs:
        f.write(b_)
d = (tensors[3][2] - tensors[4][2]).abs().max().item()
print(f"wrote {out}; max |peft - merged| logp {d:.2e}")
