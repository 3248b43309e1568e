"""PyTorch eager baseline of the device check (bench/device-check.sh): torch.matmul GFLOP/s and the
train step of the same GPT as GpuModel's default (LayerNorm, tanh-GELU MLP x4, learned positions,
tied head; as model/golden/make_golden.py writes it), at the sizes check.mjs measured (read from its
ours.json), forward + backward + AdamW, f32 with TF32 off, on CUDA when there is one.
  python3 torch_baseline.py --spec ours.json --out torch.json
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--spec", required=True)
ap.add_argument("--out", required=True)
args = ap.parse_args()
spec = json.load(open(args.spec))["spec"]

dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
if dev.type == "cuda":
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    name = torch.cuda.get_device_name(0)
else:
    name = "cpu"
print(f"torch {torch.__version__} on {name}")


def sync():
    if dev.type == "cuda":
        torch.cuda.synchronize()


gflops = {}
for n in spec["matmul"]:
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    inner = 8 if dev.type == "cuda" else 1
    (a @ b).sum().item()
    xs = []
    for _ in range(3):
        sync()
        t0 = time.perf_counter()
        for _ in range(inner):
            c = a @ b
        sync()
        xs.append(2 * n**3 * inner / (time.perf_counter() - t0) / 1e9)
    gflops[str(n)] = statistics.median(xs)
    print(f"matmul {n}^3: {gflops[str(n)]:.2f} GFLOP/s")

t = spec["train"]
L, C, NH, T, B, V = t["layers"], t["dModel"], t["heads"], t["context"], t["batch"], t["vocab"]
H = 4 * C
g = torch.Generator().manual_seed(1)


def rnd(*shape, std=0.02, mean=0.0):
    return (mean + std * torch.randn(*shape, generator=g)).to(dev).requires_grad_()


P = {"wte": rnd(V, C), "wpe": rnd(T, C)}
for l in range(L):
    P.update({f"{l}.ln1w": rnd(C, std=0, mean=1), f"{l}.ln1b": rnd(C, std=0), f"{l}.qkvw": rnd(3 * C, C),
              f"{l}.qkvb": rnd(3 * C, std=0), f"{l}.projw": rnd(C, C), f"{l}.projb": rnd(C, std=0),
              f"{l}.ln2w": rnd(C, std=0, mean=1), f"{l}.ln2b": rnd(C, std=0), f"{l}.fcw": rnd(H, C),
              f"{l}.fcb": rnd(H, std=0), f"{l}.fcprojw": rnd(C, H), f"{l}.fcprojb": rnd(C, std=0)})
P["lnfw"] = rnd(C, std=0, mean=1)
P["lnfb"] = rnd(C, std=0)
tokens = torch.randint(0, V, (B, T), generator=g).to(dev)
targets = torch.randint(0, V, (B, T), generator=g).to(dev)
causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=dev))
hs = C // NH


def forward():
    x = P["wte"][tokens] + P["wpe"][None]  # (B,T,C)
    for l in range(L):
        h = F.layer_norm(x, (C,), P[f"{l}.ln1w"], P[f"{l}.ln1b"], 1e-5)
        q, k, v = (h @ P[f"{l}.qkvw"].T + P[f"{l}.qkvb"]).split(C, dim=2)
        q, k, v = (z.view(B, T, NH, hs).transpose(1, 2) for z in (q, k, v))  # (B,NH,T,hs)
        att = ((q @ k.transpose(-2, -1)) / math.sqrt(hs)).masked_fill(~causal, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ P[f"{l}.projw"].T + P[f"{l}.projb"]
        h = F.layer_norm(x, (C,), P[f"{l}.ln2w"], P[f"{l}.ln2b"], 1e-5)
        h = F.gelu(h @ P[f"{l}.fcw"].T + P[f"{l}.fcb"], approximate="tanh")
        x = x + h @ P[f"{l}.fcprojw"].T + P[f"{l}.fcprojb"]
    x = F.layer_norm(x, (C,), P["lnfw"], P["lnfb"], 1e-5)
    return x @ P["wte"].T  # (B,T,V)


opt = torch.optim.AdamW(P.values(), lr=1e-3, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.01)
tps = []
for i in range(t["steps"] + 1):
    sync()
    t0 = time.perf_counter()
    opt.zero_grad()
    logp = forward().log_softmax(-1).gather(-1, targets[..., None])[..., 0]
    loss = -logp.mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(P.values(), 1.0)
    opt.step()
    loss.item()  # the lab reads its loss back too
    sync()
    if i > 0:
        tps.append(B * T / (time.perf_counter() - t0))
print(f"train step d{C} L{L} T{T} B{B}: {statistics.median(tps):.0f} tokens/s")
json.dump({"device": name, "torch": torch.__version__, "matmulGflops": gflops, "trainTokensPerS": tps}, open(args.out, "w"))
