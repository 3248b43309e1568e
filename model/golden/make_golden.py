# Golden fixture for the transformer, made by PyTorch (llm.c's train_gpt2.py write_state habit).
# Run with Debian's torch:  /usr/bin/python3 model/golden/make_golden.py
# Writes model/golden/tiny.bin; read by model/golden.ts and checked by model/cpu.test.ts
# (CPU model) and model/gpu.gpu.test.ts (WebGPU model).
#
# The network is written out here independently of the TS code, from the config's meaning:
# pre-LayerNorm GPT, learned absolute positions, causal attention, GELU (tanh form), tied
# embeddings, nanoGPT's parameter names and (out, in) Linear weight shapes.
# Loss: -sum(mask*logp)/N - 0.01*sum(mask*entropy)/N with N = sum(mask), so the fixture also
# checks the entropy gradient of the fused log-softmax.
#
# File layout (little endian): u32 magic 0x4C524C47 ("GLRL"), u32 version 1, u32 json length,
# the JSON header, zero padding to a multiple of 4, then the data. The header holds the config,
# B, T, the AdamW hyperparameters and, per tensor, {dtype: "f32"|"i32", shape, offset} with
# offset in 4-byte words from the start of the data.
import json
import math
import os
import struct

import torch
import torch.nn.functional as F

MAGIC = 0x4C524C47
VERSION = 1
VOCAB = 107  # model/tokenizer.ts VOCAB_SIZE
CONFIG = dict(layers=2, dModel=32, heads=2, context=16, vocab=VOCAB, norm="layernorm", mlp="gelu",
              mlpRatio=4, positional="learned", tiedEmbeddings=True, valueHead=False, normEps=1e-5,
              ropeTheta=10000)
B, T = 2, 11
ENT_COEF = 0.01
HP = dict(lr=1e-2, beta1=0.9, beta2=0.98, eps=1e-8, weightDecay=0.01, maxGradNorm=1.0)
STEPS = 10

torch.manual_seed(0)
g = torch.Generator().manual_seed(1234)
C, L, NH, V, TT = CONFIG["dModel"], CONFIG["layers"], CONFIG["heads"], VOCAB, CONFIG["context"]
H = 4 * C


def rnd(*shape, std=0.1, mean=0.0):
    return (mean + std * torch.randn(*shape, generator=g, dtype=torch.float64)).float()


# Larger-than-init weights so every path (attention pattern, GELU curvature, norms) matters.
params = {"wte.weight": rnd(V, C, std=0.3), "wpe.weight": rnd(TT, C, std=0.3)}
for l in range(L):
    p = f"h.{l}."
    params[p + "ln_1.weight"] = rnd(C, mean=1.0)
    params[p + "ln_1.bias"] = rnd(C)
    params[p + "attn.c_attn.weight"] = rnd(3 * C, C, std=0.2)
    params[p + "attn.c_attn.bias"] = rnd(3 * C)
    params[p + "attn.c_proj.weight"] = rnd(C, C, std=0.1)
    params[p + "attn.c_proj.bias"] = rnd(C)
    params[p + "ln_2.weight"] = rnd(C, mean=1.0)
    params[p + "ln_2.bias"] = rnd(C)
    params[p + "mlp.c_fc.weight"] = rnd(H, C, std=0.2)
    params[p + "mlp.c_fc.bias"] = rnd(H)
    params[p + "mlp.c_proj.weight"] = rnd(C, H, std=0.1)
    params[p + "mlp.c_proj.bias"] = rnd(C)
params["ln_f.weight"] = rnd(C, mean=1.0)
params["ln_f.bias"] = rnd(C)
init = {k: v.clone() for k, v in params.items()}

tokens = torch.randint(0, V, (B, T), generator=g)
targets = torch.randint(0, V, (B, T), generator=g)
mask = (torch.rand(B, T, generator=g) < 0.7).float()
mask[0, 0] = 1.0


def forward(P):
    x = P["wte.weight"][tokens] + P["wpe.weight"][torch.arange(T)][None]  # (B,T,C)
    hs = C // NH
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        p = f"h.{l}."
        h = F.layer_norm(x, (C,), P[p + "ln_1.weight"], P[p + "ln_1.bias"], CONFIG["normEps"])
        qkv = h @ P[p + "attn.c_attn.weight"].T + P[p + "attn.c_attn.bias"]  # (B,T,3C)
        q, k, v = qkv.split(C, dim=2)
        q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in (q, k, v))  # (B,NH,T,hs)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ P[p + "attn.c_proj.weight"].T + P[p + "attn.c_proj.bias"]
        h = F.layer_norm(x, (C,), P[p + "ln_2.weight"], P[p + "ln_2.bias"], CONFIG["normEps"])
        h = F.gelu(h @ P[p + "mlp.c_fc.weight"].T + P[p + "mlp.c_fc.bias"], approximate="tanh")
        x = x + h @ P[p + "mlp.c_proj.weight"].T + P[p + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (C,), P["ln_f.weight"], P["ln_f.bias"], CONFIG["normEps"])
    return x @ P["wte.weight"].T  # (B,T,V), tied head


def losses(logits):
    lp = logits.log_softmax(-1)
    logp = lp.gather(-1, targets[..., None])[..., 0]  # (B,T)
    ent = -(lp.exp() * lp).sum(-1)  # (B,T)
    n = mask.sum()
    ce = -(mask * logp).sum() / n
    return ce - ENT_COEF * (mask * ent).sum() / n, ce, logp, ent


for v in params.values():
    v.requires_grad_(True)
logits = forward(params)
loss, ce, logp, ent = losses(logits)
loss.backward()
grads = {k: v.grad.detach().clone() for k, v in params.items()}

opt = torch.optim.AdamW(list(params.values()), lr=HP["lr"], betas=(HP["beta1"], HP["beta2"]), eps=HP["eps"],
                        weight_decay=HP["weightDecay"])
step_losses, step_norms = [], []
for _ in range(STEPS):
    opt.zero_grad()
    l_, *_ = losses(forward(params))
    l_.backward()
    norm = torch.nn.utils.clip_grad_norm_(list(params.values()), HP["maxGradNorm"])
    step_losses.append(l_.item())
    step_norms.append(norm.item())
    opt.step()

tensors = []  # (name, dtype, tensor)
for k, v in init.items():
    tensors.append(("param." + k, "f32", v))
for k, v in grads.items():
    tensors.append(("grad." + k, "f32", v))
tensors += [
    ("tokens", "i32", tokens.int()),
    ("targets", "i32", targets.int()),
    ("mask", "f32", mask),
    ("logits", "f32", logits.detach()),
    ("logp", "f32", logp.detach()),
    ("entropy", "f32", ent.detach()),
    ("loss", "f32", loss.detach().reshape(1)),
    ("ce", "f32", ce.detach().reshape(1)),
    ("step_losses", "f32", torch.tensor(step_losses)),
    ("step_grad_norms", "f32", torch.tensor(step_norms)),
]
entries, blobs, off = {}, [], 0
for name, dt, t in tensors:
    arr = t.contiguous().reshape(-1)
    entries[name] = {"dtype": dt, "shape": list(t.shape), "offset": off}
    blobs.append(arr.numpy().astype("<i4" if dt == "i32" else "<f4").tobytes())
    off += arr.numel()
header = json.dumps({"config": CONFIG, "B": B, "T": T, "entCoef": ENT_COEF, "hparams": HP, "steps": STEPS,
                     "tensors": entries}).encode()
pad = (4 - len(header) % 4) % 4
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny.bin")
with open(out, "wb") as f:
    f.write(struct.pack("<III", MAGIC, VERSION, len(header)))
    f.write(header + b"\0" * pad)
    for b in blobs:
        f.write(b)
print(f"wrote {out}: {os.path.getsize(out)} bytes; loss {loss.item():.6f} ce {ce.item():.6f}; "
      f"10-step losses {[round(x, 4) for x in step_losses]}")
