# The float64 golden of the lab's own Llama (public/models/lab-llama) at a long context: per-token
# log-probs of one sequence of T = 600 tokens, every operation in float64 from the f32 weights,
# RoPE angles included (pos * theta^(-2i/hs) in float64, then cos and sin). The network is
# make_hf_models.py's, written from the architecture independently of the TypeScript.
# Run (a venv with model/golden/requirements-golden.txt, PyTorch 2.13):
#   ~/.cache/agentic-rl-lab/venv-golden/bin/python model/golden/make_lab_llama_golden.py
# Writes model/golden/lab-llama-t600.json: {model, T, seed, tokens, targets, logp, logp_f32}
# (logp_f32: the same network in float32 with float32 angles, as transformers computes them, for
# comparison). Read by model/rope-long.gpu.test.ts.
import argparse
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_hf_models import dims, forward  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise ValueError(f"{path}: {name} is {t['dtype']}, expected F32")
        a, b = t["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[a:b]), dtype=torch.float32).reshape(t["shape"])
    return out


def tokens_of(seed, T, V):
    # a fixed LCG (Numerical Recipes' constants), so the sequence needs no RNG library
    s, out = seed, []
    for _ in range(T + 1):
        s = (1664525 * s + 1013904223) % 2**32
        out.append(s % V)
    return out


def forward_f32(cfg, P, tokens):
    # transformers' float32 RoPE: inv_freq and the angle in float32
    import make_hf_models as m

    def rope32(x, theta):
        hs = x.shape[-1]
        inv = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=torch.int64).float() / hs))
        ang = torch.arange(x.shape[-2], dtype=torch.float32)[:, None] * inv[None]
        cos = torch.cat([ang.cos(), ang.cos()], -1)
        sin = torch.cat([ang.sin(), ang.sin()], -1)
        x1, x2 = x[..., : hs // 2], x[..., hs // 2 :]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    saved = m.rope
    m.rope = rope32
    try:
        return m.forward(cfg, P, tokens)
    finally:
        m.rope = saved


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="public/models/lab-llama")
    ap.add_argument("--T", type=int, default=600)
    ap.add_argument("--seed", type=int, default=600)
    ap.add_argument("--out", default="model/golden/lab-llama-t600.json")
    a = ap.parse_args()
    mdir = os.path.join(ROOT, a.model)
    with open(os.path.join(mdir, "config.json")) as f:
        cfg = json.load(f)
    P32 = read_safetensors(os.path.join(mdir, "model.safetensors"))
    V = dims(cfg)[5]
    seq = tokens_of(a.seed, a.T, V)
    tokens, targets = seq[:-1], seq[1:]
    tok = torch.tensor([tokens])
    tgt = torch.tensor([targets])

    def logp_of(logits):
        lp = logits.log_softmax(-1)
        return lp.gather(-1, tgt[..., None])[0, :, 0]

    P64 = {k: v.double() for k, v in P32.items()}
    lp64 = logp_of(forward(cfg, P64, tok))
    lp32 = logp_of(forward_f32(cfg, P32, tok))
    print(f"float32 vs float64: max |dlogp| {float((lp32.double() - lp64).abs().max()):.3e}")
    out = {
        "model": a.model,
        "T": a.T,
        "seed": a.seed,
        "tokens": tokens,
        "targets": targets,
        "logp": [float(x) for x in lp64],
        "logp_f32": [float(x) for x in lp32],
    }
    with open(os.path.join(ROOT, a.out), "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
