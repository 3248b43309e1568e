# Tiny random Hugging Face models of each family (llama, qwen2, qwen3) and their PyTorch golden
# fixtures. Run with Debian's torch (no transformers needed):
#   /usr/bin/python3 model/golden/make_hf_models.py
# Writes model/golden/hf/<family>/: config.json, bf16 safetensors in the Hugging Face layout
# (llama sharded in two files with model.safetensors.index.json), and golden.bin; read by
# model/hf/read.ts and model/golden.ts, checked by model/hf/read.test.ts (CPU) and model/hf/read.gpu.test.ts.
# Other sizes (e.g. a tiny qwen3 with a real tokenizer's vocabulary) for other tests:
#   /usr/bin/python3 model/golden/make_hf_models.py --family qwen3 --vocab 151936 --out DIR --no-golden
# (--max-position N raises max_position_embeddings, for prompts longer than the fixture's 32:
# the README's tiny Qwen3 run with the real tokenizer and chat template uses 512.)
#
# The network is written here from the architecture, independently of the TypeScript:
# token embedding; per layer RMSNorm -> q, k, v projections (Qwen2: with biases) -> Qwen3: RMSNorm
# over each head's values of q and k -> RoPE in the rotate-half convention (pairs (i, i + hs/2),
# angle pos * theta^(-2i/hs)) -> causal softmax attention with grouped-query heads (query head h
# reads key/value head h // (NH/KVH)) scaled by 1/sqrt(head_dim) -> o_proj -> residual; RMSNorm ->
# down(silu(gate) * up) -> residual; final RMSNorm; lm_head (or the embedding when tied).
# Everything is computed in float64 from the bf16 weights.
# Loss: -sum(mask*logp)/N - 0.01*sum(mask*entropy)/N with N = sum(mask), as make_golden.py.
#
# golden.bin (little endian): u32 magic 0x46484C47 ("GLHF"), u32 version 1, u32 json length, the
# JSON header, zero padding to a multiple of 4, then the data. The header holds the family, B, T,
# entCoef, the AdamW hyperparameters, steps and, per tensor, {dtype: "f32"|"i32", shape, offset}
# with offset in 4-byte words from the start of the data. Tensors: "param.<hf name>" (the bf16
# weights as f32), "grad.<hf name>", tokens, targets, mask, logits, logp, entropy, loss, ce,
# step_losses, step_grad_norms (10 AdamW steps with clipping).
import argparse
import json
import math
import os
import struct

import torch

MAGIC = 0x46484C47
VERSION = 1
B, T = 2, 7
ENT_COEF = 0.01
HP = dict(lr=1e-2, beta1=0.9, beta2=0.98, eps=1e-8, weightDecay=0.01, maxGradNorm=1.0)
STEPS = 10

# Each family differs where the architectures do: GQA ratio, head_dim != hidden/heads (qwen3),
# tied or not, q/k/v biases (qwen2), q/k norms (qwen3), eps and theta. The extra fields are the
# kind real configs carry, which the reader must ignore.
CONFIGS = {
    "llama": dict(
        architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, intermediate_size=48, vocab_size=96,
        max_position_embeddings=32, rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
        hidden_act="silu", attention_bias=False, mlp_bias=False, attention_dropout=0.0, rope_scaling=None,
        is_llama_config=True, rope_interleaved=False, pretraining_tp=1, initializer_range=0.02,
        bos_token_id=0, eos_token_id=0, torch_dtype="bfloat16", transformers_version="4.42.3", use_cache=True),
    "qwen2": dict(
        architectures=["Qwen2ForCausalLM"], model_type="qwen2", hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, intermediate_size=40, vocab_size=80,
        max_position_embeddings=32, rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=False,
        hidden_act="silu", attention_dropout=0.0, use_sliding_window=False, sliding_window=32,
        max_window_layers=2, rope_scaling=None, bos_token_id=0, eos_token_id=1, initializer_range=0.02,
        torch_dtype="bfloat16", transformers_version="4.43.1", use_cache=True),
    "qwen3": dict(
        architectures=["Qwen3ForCausalLM"], model_type="qwen3", hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=48, vocab_size=96,
        max_position_embeddings=32, rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
        hidden_act="silu", attention_bias=False, attention_dropout=0.0, use_sliding_window=False,
        sliding_window=None, max_window_layers=2, rope_scaling=None, bos_token_id=0, eos_token_id=1,
        initializer_range=0.02, torch_dtype="bfloat16", transformers_version="4.51.0", use_cache=True),
}
SHARDED = {"llama"}


def dims(cfg):
    C, NH = cfg["hidden_size"], cfg["num_attention_heads"]
    KVH = cfg.get("num_key_value_heads", NH)
    hs = cfg.get("head_dim") or C // NH
    return C, NH, KVH, hs, cfg["intermediate_size"], cfg["vocab_size"]


def random_params(cfg, g):
    C, NH, KVH, hs, I, V = dims(cfg)
    fam = cfg["model_type"]

    def rnd(*shape, std=0.1, mean=0.0):
        return (mean + std * torch.randn(*shape, generator=g, dtype=torch.float64)).to(torch.bfloat16)

    # Larger than a real init so attention patterns, norms and the gate's curvature all matter.
    P = {"model.embed_tokens.weight": rnd(V, C, std=0.25)}
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        P[p + "input_layernorm.weight"] = rnd(C, mean=1.0)
        P[p + "self_attn.q_proj.weight"] = rnd(NH * hs, C, std=0.3)
        P[p + "self_attn.k_proj.weight"] = rnd(KVH * hs, C, std=0.3)
        P[p + "self_attn.v_proj.weight"] = rnd(KVH * hs, C, std=0.3)
        if fam == "qwen2":
            P[p + "self_attn.q_proj.bias"] = rnd(NH * hs)
            P[p + "self_attn.k_proj.bias"] = rnd(KVH * hs)
            P[p + "self_attn.v_proj.bias"] = rnd(KVH * hs)
        if fam == "qwen3":
            P[p + "self_attn.q_norm.weight"] = rnd(hs, mean=1.0)
            P[p + "self_attn.k_norm.weight"] = rnd(hs, mean=1.0)
        P[p + "self_attn.o_proj.weight"] = rnd(C, NH * hs, std=0.2)
        P[p + "post_attention_layernorm.weight"] = rnd(C, mean=1.0)
        P[p + "mlp.gate_proj.weight"] = rnd(I, C, std=0.3)
        P[p + "mlp.up_proj.weight"] = rnd(I, C, std=0.3)
        P[p + "mlp.down_proj.weight"] = rnd(C, I, std=0.2)
    P["model.norm.weight"] = rnd(C, mean=1.0)
    if not cfg["tie_word_embeddings"]:
        P["lm_head.weight"] = rnd(V, C, std=0.25)
    return P


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, theta):  # x (B, heads, T, hs), rotate-half
    hs = x.shape[-1]
    inv = theta ** (-torch.arange(0, hs, 2, dtype=torch.float64) / hs)  # (hs/2)
    ang = torch.arange(x.shape[-2], dtype=torch.float64)[:, None] * inv[None]  # (T, hs/2)
    cos = torch.cat([ang.cos(), ang.cos()], -1)
    sin = torch.cat([ang.sin(), ang.sin()], -1)
    x1, x2 = x[..., : hs // 2], x[..., hs // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def forward(cfg, P, tokens):
    C, NH, KVH, hs, I, V = dims(cfg)
    eps, theta, fam = cfg["rms_norm_eps"], cfg["rope_theta"], cfg["model_type"]
    Bn, Tn = tokens.shape
    x = P["model.embed_tokens.weight"][tokens]  # (B,T,C)
    causal = torch.tril(torch.ones(Tn, Tn, dtype=torch.bool))
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."

        def lin(h, name):
            y = h @ P[p + name + ".weight"].T
            b = P.get(p + name + ".bias")
            return y if b is None else y + b

        h = rms_norm(x, P[p + "input_layernorm.weight"], eps)
        q = lin(h, "self_attn.q_proj").view(Bn, Tn, NH, hs)
        k = lin(h, "self_attn.k_proj").view(Bn, Tn, KVH, hs)
        v = lin(h, "self_attn.v_proj").view(Bn, Tn, KVH, hs)
        if fam == "qwen3":
            q = rms_norm(q, P[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, P[p + "self_attn.k_norm.weight"], eps)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B,heads,T,hs)
        q, k = rope(q, theta), rope(k, theta)
        k = k.repeat_interleave(NH // KVH, dim=1)  # query head h reads kv head h // (NH/KVH)
        v = v.repeat_interleave(NH // KVH, dim=1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(Bn, Tn, NH * hs)
        x = x + lin(y, "self_attn.o_proj")
        h = rms_norm(x, P[p + "post_attention_layernorm.weight"], eps)
        gate, up = lin(h, "mlp.gate_proj"), lin(h, "mlp.up_proj")
        x = x + lin(gate * torch.sigmoid(gate) * up, "mlp.down_proj")
    x = rms_norm(x, P["model.norm.weight"], eps)
    head = P["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else P["lm_head.weight"]
    return x @ head.T  # (B,T,V)


def write_safetensors(path, tensors):
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        raw = t.contiguous().view(torch.int16).numpy().astype("<i2").tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    js = json.dumps(header, separators=(",", ":"))
    js += " " * ((8 - (8 + len(js)) % 8) % 8)  # data 8-byte aligned, as the reference writer
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)))
        f.write(js.encode())
        for b in blobs:
            f.write(b)
    return off


def write_model(out, cfg, P, sharded):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    if not sharded:
        write_safetensors(os.path.join(out, "model.safetensors"), P)
        return
    names = list(P)
    half = len(names) // 2
    shards = [names[:half], names[half:]]
    weight_map, total = {}, 0
    for i, part in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        total += write_safetensors(os.path.join(out, fname), {n: P[n] for n in part})
        weight_map.update({n: fname for n in part})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        f.write("\n")


def write_golden(out, cfg, P, g):
    V = cfg["vocab_size"]
    params = {k: v.to(torch.float64) for k, v in P.items()}
    init = {k: v.float() for k, v in params.items()}
    tokens = torch.randint(0, V, (B, T), generator=g)
    targets = torch.randint(0, V, (B, T), generator=g)
    mask = (torch.rand(B, T, generator=g, dtype=torch.float64) < 0.7).double()
    mask[0, 0] = 1.0

    def losses(logits):
        lp = logits.log_softmax(-1)
        logp = lp.gather(-1, targets[..., None])[..., 0]  # (B,T)
        ent = -(lp.exp() * lp).sum(-1)  # (B,T)
        n = mask.sum()
        ce = -(mask * logp).sum() / n
        return ce - ENT_COEF * (mask * ent).sum() / n, ce, logp, ent

    for v in params.values():
        v.requires_grad_(True)
    logits = forward(cfg, params, tokens)
    loss, ce, logp, ent = losses(logits)
    loss.backward()
    grads = {k: v.grad.detach().clone() for k, v in params.items()}

    opt = torch.optim.AdamW(list(params.values()), lr=HP["lr"], betas=(HP["beta1"], HP["beta2"]),
                            eps=HP["eps"], weight_decay=HP["weightDecay"])
    step_losses, step_norms = [], []
    for _ in range(STEPS):
        opt.zero_grad()
        l_, *_ = losses(forward(cfg, params, tokens))
        l_.backward()
        norm = torch.nn.utils.clip_grad_norm_(list(params.values()), HP["maxGradNorm"])
        step_losses.append(l_.item())
        step_norms.append(norm.item())
        opt.step()

    tensors = [("param." + k, "f32", v) for k, v in init.items()]
    tensors += [("grad." + k, "f32", v) for k, v in grads.items()]
    tensors += [
        ("tokens", "i32", tokens.int()), ("targets", "i32", targets.int()), ("mask", "f32", mask),
        ("logits", "f32", logits.detach()), ("logp", "f32", logp.detach()), ("entropy", "f32", ent.detach()),
        ("loss", "f32", loss.detach().reshape(1)), ("ce", "f32", ce.detach().reshape(1)),
        ("step_losses", "f32", torch.tensor(step_losses)), ("step_grad_norms", "f32", torch.tensor(step_norms)),
    ]
    entries, blobs, off = {}, [], 0
    for name, dt, t in tensors:
        arr = t.detach().contiguous().reshape(-1)
        entries[name] = {"dtype": dt, "shape": list(t.shape), "offset": off}
        blobs.append(arr.numpy().astype("<i4" if dt == "i32" else "<f4").tobytes())
        off += arr.numel()
    header = json.dumps({"family": cfg["model_type"], "B": B, "T": T, "entCoef": ENT_COEF, "hparams": HP,
                         "steps": STEPS, "tensors": entries}).encode()
    pad = (4 - len(header) % 4) % 4
    path = os.path.join(out, "golden.bin")
    with open(path, "wb") as f:
        f.write(struct.pack("<III", MAGIC, VERSION, len(header)))
        f.write(header + b"\0" * pad)
        for b in blobs:
            f.write(b)
    return loss.item(), step_losses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", choices=sorted(CONFIGS), action="append", help="default: all three")
    ap.add_argument("--vocab", type=int, help="vocabulary size (default: the fixture's)")
    ap.add_argument("--out", help="output folder (default: model/golden/hf/<family>)")
    ap.add_argument("--no-golden", action="store_true", help="write only the model files")
    ap.add_argument("--max-position", type=int, help="max_position_embeddings (default: the fixture's)")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    for fam in a.family or sorted(CONFIGS):
        cfg = dict(CONFIGS[fam])
        if a.vocab:
            cfg["vocab_size"] = a.vocab
        if a.max_position:
            cfg["max_position_embeddings"] = a.max_position
        g = torch.Generator().manual_seed(a.seed)
        out = a.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf", fam)
        P = random_params(cfg, g)
        write_model(out, cfg, P, fam in SHARDED)
        msg = f"wrote {out}"
        if not a.no_golden:
            loss, traj = write_golden(out, cfg, P, g)
            msg += f": loss {loss:.6f}; 10-step losses {[round(x, 4) for x in traj]}"
        print(msg)


if __name__ == "__main__":
    main()
