# Golden fixture for LoRA on the tiny transformer, made by PyTorch.
# Run with Debian's torch:  /usr/bin/python3 model/golden/make_lora_golden.py
# Writes model/golden/lora-gpt.bin and model/golden/lora-llama.bin; read by model/golden.ts
# (readGoldenFile) and checked by model/lora.test.ts (CPU) and model/lora.gpu.test.ts (WebGPU).
#
# Written from LoRA's definition (Hu et al. 2021; PEFT's Linear: y = x W^T + b + (alpha/r) *
# (x A^T) B^T, dropout 0), independently of the TS code: here q, k, v, gate and up are SEPARATE
# Linear weights, each with its own adapter, as in Hugging Face models; the lab stacks them into
# c_attn / c_fc, so the fixture checks that mapping too. Two variants:
#   gpt:   pre-LayerNorm, GELU(tanh), learned positions, tied head (GPT-2-like); targets
#          q,k,v,o,up,down (a gelu MLP has no gate; its fc is "up")
#   llama: RMSNorm, SwiGLU, RoPE (rotate_half), untied head; all seven targets
#   qwen2: llama + grouped-query attention (2 query heads, 1 kv head), biases on q/k/v only
#   qwen3: qwen2 without biases, a head size of its own (8, not C/NH) and RMSNorm on each q and
#          k head before RoPE (q_norm, k_norm)
# Loss: -sum(mask*logp)/N - 0.01*sum(mask*entropy)/N, N = sum(mask). Only the adapter has
# requires_grad (a frozen base). Also 5 AdamW steps on the adapter (clip 1.0): losses, norms.
#
# File layout as make_golden.py (little endian): u32 magic 0x4C524C47 ("GLRL"), u32 version 1,
# u32 json length, the JSON header, zero padding to a multiple of 4, then the data. Header:
# config (with lora), B, T, entCoef, hparams, steps and per tensor {dtype, shape, offset}
# (offset in 4-byte words). Base tensors are "param.<lab name>" with q/k/v (gate/up) already
# stacked in the lab's order; adapter tensors "lora.h.L.<target>.lora_A.weight" (r, in) and
# "...lora_B.weight" (out, r); their gradients "grad.lora.h.L...".
import json
import math
import os
import struct

import torch
import torch.nn.functional as F

MAGIC = 0x4C524C47
VERSION = 1
VOCAB = 29
B, T = 2, 7
ENT_COEF = 0.01
HP = dict(lr=1e-2, beta1=0.9, beta2=0.98, eps=1e-8, weightDecay=0.01, maxGradNorm=1.0)
STEPS = 5
RANK, ALPHA = 3, 6.0

ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
LLAMA = dict(norm="rmsnorm", mlp="swiglu", positional="rope", tiedEmbeddings=False, targets=ALL)
VARIANTS = {
    "gpt": dict(norm="layernorm", mlp="gelu", positional="learned", tiedEmbeddings=True,
                targets=["q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj"]),
    "llama": LLAMA,
    "qwen2": dict(LLAMA, kvHeads=1, projBias=False, mlpBias=False),
    "qwen3": dict(LLAMA, kvHeads=1, headDim=8, qkvBias=False, projBias=False, mlpBias=False, qkNorm=True),
}


def make(variant):
    v = VARIANTS[variant]
    L, C, NH, TT, ratio = 2, 12, 2, 16, 2
    H = ratio * C
    KVH = v.get("kvHeads", 0) or NH
    hs = v.get("headDim", 0) or C // NH
    Q, KV = NH * hs, KVH * hs
    bias = {"q": v.get("qkvBias", True), "k": v.get("qkvBias", True), "v": v.get("qkvBias", True),
            "o": v.get("projBias", True), "gate": v.get("mlpBias", True), "up": v.get("mlpBias", True),
            "down": v.get("mlpBias", True)}
    qk_norm = v.get("qkNorm", False)
    config = dict(layers=L, dModel=C, heads=NH, kvHeads=v.get("kvHeads", 0), headDim=v.get("headDim", 0),
                  context=TT, vocab=VOCAB, norm=v["norm"], mlp=v["mlp"], mlpRatio=ratio, qkvBias=bias["q"],
                  projBias=bias["o"], mlpBias=bias["up"], qkNorm=qk_norm, positional=v["positional"],
                  tiedEmbeddings=v["tiedEmbeddings"], valueHead=False, normEps=1e-5, ropeTheta=10000,
                  lora=dict(rank=RANK, alpha=ALPHA, targets=v["targets"]))
    g = torch.Generator().manual_seed(list(VARIANTS).index(variant) + 77)

    def rnd(*shape, std=0.2, mean=0.0):
        return (mean + std * torch.randn(*shape, generator=g, dtype=torch.float64)).float()

    ln = v["norm"] == "layernorm"
    swiglu = v["mlp"] == "swiglu"
    # Base weights, Hugging Face style (separate q, k, v, gate, up), (out, in) shapes.
    W = {"embed": rnd(VOCAB, C, std=0.4)}
    if v["positional"] == "learned":
        W["wpe"] = rnd(TT, C, std=0.3)
    for l in range(L):
        p = f"{l}."
        W[p + "ln1.w"] = rnd(C, mean=1.0, std=0.1)
        W[p + "ln2.w"] = rnd(C, mean=1.0, std=0.1)
        if ln:
            W[p + "ln1.b"] = rnd(C, std=0.1)
            W[p + "ln2.b"] = rnd(C, std=0.1)
        shapes = {"q": (Q, C), "k": (KV, C), "v": (KV, C), "o": (C, Q), "up": (H, C), "down": (C, H)}
        if swiglu:
            shapes["gate"] = (H, C)
        for n in ["q", "k", "v", "o", "gate", "up", "down"]:
            if n not in shapes:
                continue
            W[p + n + ".w"] = rnd(*shapes[n], std=0.3 if n in "qkv" or n in ("gate", "up") else 0.2)
            W[p + n + ".b"] = rnd(shapes[n][0], std=0.1) if bias[n] else torch.zeros(shapes[n][0])
        if qk_norm:
            W[p + "qn.w"] = rnd(hs, mean=1.0, std=0.1)
            W[p + "kn.w"] = rnd(hs, mean=1.0, std=0.1)
    W["lnf.w"] = rnd(C, mean=1.0, std=0.1)
    if ln:
        W["lnf.b"] = rnd(C, std=0.1)
    if not v["tiedEmbeddings"]:
        W["head"] = rnd(VOCAB, C, std=0.4)

    io = {"q_proj": (C, Q), "k_proj": (C, KV), "v_proj": (C, KV), "o_proj": (Q, C), "gate_proj": (C, H),
          "up_proj": (C, H), "down_proj": (H, C)}
    # Non-zero A and B (a fresh adapter's B = 0 would hide the B path).
    A = {}
    for l in range(L):
        for t in v["targets"]:
            i, o = io[t]
            A[f"h.{l}.{t}.lora_A.weight"] = rnd(RANK, i, std=0.3).requires_grad_(True)
            A[f"h.{l}.{t}.lora_B.weight"] = rnd(o, RANK, std=0.3).requires_grad_(True)
    scale = ALPHA / RANK

    def lin(x, l, name, target):
        y = x @ W[f"{l}.{name}.w"].T + W[f"{l}.{name}.b"]
        key = f"h.{l}.{target}"
        if target in v["targets"]:
            y = y + scale * (x @ A[key + ".lora_A.weight"].T) @ A[key + ".lora_B.weight"].T
        return y

    def norm(x, w, b):
        if ln:
            return F.layer_norm(x, (C,), w, b, 1e-5)
        return rms(x, w)

    def rms(x, w):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * w

    def rope(x):  # (B,NH,T,hs), rotate_half pairs (i, i + hs/2)
        half = hs // 2
        inv = 10000.0 ** (-2 * torch.arange(half, dtype=torch.float64) / hs)
        ang = (torch.arange(T, dtype=torch.float64)[:, None] * inv[None]).float()
        cos, sin = ang.cos(), ang.sin()
        x0, x1 = x[..., :half], x[..., half:]
        return torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos], -1)

    tokens = torch.randint(0, VOCAB, (B, T), generator=g)
    targets = torch.randint(0, VOCAB, (B, T), generator=g)
    mask = (torch.rand(B, T, generator=g) < 0.7).float()
    mask[0, 0] = 1.0
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))

    def forward():
        x = W["embed"][tokens]
        if "wpe" in W:
            x = x + W["wpe"][torch.arange(T)][None]
        for l in range(L):
            h = norm(x, W[f"{l}.ln1.w"], W.get(f"{l}.ln1.b"))
            q = lin(h, l, "q", "q_proj").view(B, T, NH, hs).transpose(1, 2)
            k, vv = (lin(h, l, n, n + "_proj").view(B, T, KVH, hs).transpose(1, 2) for n in ["k", "v"])
            if qk_norm:
                q, k = rms(q, W[f"{l}.qn.w"]), rms(k, W[f"{l}.kn.w"])
            k, vv = k.repeat_interleave(NH // KVH, dim=1), vv.repeat_interleave(NH // KVH, dim=1)
            if v["positional"] == "rope":
                q, k = rope(q), rope(k)
            att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
            att = att.masked_fill(~causal, float("-inf")).softmax(-1)
            y = (att @ vv).transpose(1, 2).reshape(B, T, Q)
            x = x + lin(y, l, "o", "o_proj")
            h = norm(x, W[f"{l}.ln2.w"], W.get(f"{l}.ln2.b"))
            if swiglu:
                a = F.silu(lin(h, l, "gate", "gate_proj")) * lin(h, l, "up", "up_proj")
            else:
                a = F.gelu(lin(h, l, "up", "up_proj"), approximate="tanh")
            x = x + lin(a, l, "down", "down_proj")
        x = norm(x, W["lnf.w"], W.get("lnf.b"))
        return x @ (W["embed"] if v["tiedEmbeddings"] else W["head"]).T

    def losses(logits):
        lp = logits.log_softmax(-1)
        logp = lp.gather(-1, targets[..., None])[..., 0]
        ent = -(lp.exp() * lp).sum(-1)
        n = mask.sum()
        return -(mask * logp).sum() / n - ENT_COEF * (mask * ent).sum() / n, logp, ent

    init = {k: t.detach().clone() for k, t in A.items()}
    logits = forward()
    loss, logp, ent = losses(logits)
    loss.backward()
    grads = {k: t.grad.detach().clone() for k, t in A.items()}
    # Base-only logits (the reference policy: adapter off).
    with torch.no_grad():
        saved = {k: t.detach().clone() for k, t in A.items()}
        for k in A:
            if k.endswith("lora_B.weight"):
                A[k].data.zero_()
        base_logits = forward()
        for k in A:
            A[k].data.copy_(saved[k])

    opt = torch.optim.AdamW(list(A.values()), lr=HP["lr"], betas=(HP["beta1"], HP["beta2"]), eps=HP["eps"],
                            weight_decay=HP["weightDecay"])
    step_losses, step_norms = [], []
    for _ in range(STEPS):
        opt.zero_grad()
        l_, *_ = losses(forward())
        l_.backward()
        norm_ = torch.nn.utils.clip_grad_norm_(list(A.values()), HP["maxGradNorm"])
        step_losses.append(l_.item())
        step_norms.append(norm_.item())
        opt.step()

    # Base weights in the lab's names, q/k/v and gate/up stacked as the lab fuses them.
    lab = {"wte.weight": W["embed"]}
    if "wpe" in W:
        lab["wpe.weight"] = W["wpe"]
    for l in range(L):
        p, s = f"h.{l}.", f"{l}."
        lab[p + "ln_1.weight"] = W[s + "ln1.w"]
        if ln:
            lab[p + "ln_1.bias"] = W[s + "ln1.b"]
        lab[p + "attn.c_attn.weight"] = torch.cat([W[s + n + ".w"] for n in "qkv"], 0)
        if bias["q"]:
            lab[p + "attn.c_attn.bias"] = torch.cat([W[s + n + ".b"] for n in "qkv"], 0)
        if qk_norm:
            lab[p + "attn.q_norm.weight"] = W[s + "qn.w"]
            lab[p + "attn.k_norm.weight"] = W[s + "kn.w"]
        lab[p + "attn.c_proj.weight"] = W[s + "o.w"]
        if bias["o"]:
            lab[p + "attn.c_proj.bias"] = W[s + "o.b"]
        lab[p + "ln_2.weight"] = W[s + "ln2.w"]
        if ln:
            lab[p + "ln_2.bias"] = W[s + "ln2.b"]
        fc = ["gate", "up"] if swiglu else ["up"]
        lab[p + "mlp.c_fc.weight"] = torch.cat([W[s + n + ".w"] for n in fc], 0)
        lab[p + "mlp.c_proj.weight"] = W[s + "down.w"]
        if bias["up"]:
            lab[p + "mlp.c_fc.bias"] = torch.cat([W[s + n + ".b"] for n in fc], 0)
            lab[p + "mlp.c_proj.bias"] = W[s + "down.b"]
    lab["ln_f.weight"] = W["lnf.w"]
    if ln:
        lab["ln_f.bias"] = W["lnf.b"]
    if not v["tiedEmbeddings"]:
        lab["lm_head.weight"] = W["head"]

    tensors = [("param." + k, "f32", t) for k, t in lab.items()]
    tensors += [("lora." + k, "f32", t) for k, t in init.items()]
    tensors += [("grad.lora." + k, "f32", t) for k, t in grads.items()]
    tensors += [
        ("tokens", "i32", tokens.int()),
        ("targets", "i32", targets.int()),
        ("mask", "f32", mask),
        ("logits", "f32", logits.detach()),
        ("base_logits", "f32", base_logits),
        ("logp", "f32", logp.detach()),
        ("entropy", "f32", ent.detach()),
        ("loss", "f32", loss.detach().reshape(1)),
        ("step_losses", "f32", torch.tensor(step_losses)),
        ("step_grad_norms", "f32", torch.tensor(step_norms)),
    ]
    entries, blobs, off = {}, [], 0
    for name, dt, t in tensors:
        arr = t.contiguous().reshape(-1)
        entries[name] = {"dtype": dt, "shape": list(t.shape), "offset": off}
        blobs.append(arr.numpy().astype("<i4" if dt == "i32" else "<f4").tobytes())
        off += arr.numel()
    header = json.dumps({"config": config, "B": B, "T": T, "entCoef": ENT_COEF, "hparams": HP, "steps": STEPS,
                         "tensors": entries}).encode()
    pad = (4 - len(header) % 4) % 4
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"lora-{variant}.bin")
    with open(out, "wb") as f:
        f.write(struct.pack("<III", MAGIC, VERSION, len(header)))
        f.write(header + b"\0" * pad)
        for b_ in blobs:
            f.write(b_)
    print(f"wrote {out}: {os.path.getsize(out)} bytes; loss {loss.item():.6f}; "
          f"{STEPS}-step losses {[round(x, 4) for x in step_losses]}")


for name in VARIANTS:
    make(name)
