"""The lab-made model as an ONNX decoder with a KV cache, for transformers.js (bench/peers-tjs.ts).

Exports a Hugging Face Llama folder (public/models/lab-llama) with PyTorch's own exporter
(torch.onnx.export, dynamo) into the layout transformers.js loads: <out>/config.json,
generation_config.json and onnx/model.onnx, whose inputs are input_ids, attention_mask,
position_ids and past_key_values.<i>.key/.value (batch, kv heads, past, head dim) and whose
outputs are logits and present.<i>.key/.value. Then checks the file with onnxruntime against
transformers on the same tokens: a prompt with an empty cache, then one token on the cache
(|logits diff| printed and bounded).

Run: <engines venv>/bin/python bench/peers/export_onnx.py --model public/models/lab-llama --out DIR
"""

import argparse
import json
import os
import shutil

import torch
from transformers import AutoModelForCausalLM, DynamicCache


class Decoder(torch.nn.Module):
    """forward(input_ids, attention_mask, position_ids, *past) -> (logits, *present) with tensors only."""

    def __init__(self, model, layers):
        super().__init__()
        self.model = model
        self.layers = layers

    def forward(self, input_ids, attention_mask, position_ids, *past):
        cache = DynamicCache()
        for i in range(self.layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
        )
        present = []
        for i in range(self.layers):
            layer = out.past_key_values.layers[i]
            present += [layer.keys, layer.values]
        return (out.logits, *present)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    c = model.config
    L, KVH = c.num_hidden_layers, c.num_key_value_heads
    hd = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    wrap = Decoder(model, L)
    B, S, P = 2, 3, 5
    ids = torch.randint(0, c.vocab_size, (B, S))
    mask = torch.ones(B, P + S, dtype=torch.int64)
    pos = torch.arange(P, P + S).unsqueeze(0).expand(B, S).contiguous()
    past = [torch.randn(B, KVH, P, hd) for _ in range(2 * L)]
    names_past = [f"past_key_values.{i}.{kv}" for i in range(L) for kv in ("key", "value")]
    names_present = [f"present.{i}.{kv}" for i in range(L) for kv in ("key", "value")]
    # the axis names transformers.js resolves when it makes the first, empty cache (batch_size; any
    # other name there is read as 0)
    batch, seq = torch.export.Dim("batch_size"), torch.export.Dim("sequence_length")
    past_len, total = torch.export.Dim("past_sequence_length"), torch.export.Dim("total_sequence_length")
    shapes = (
        {0: batch, 1: seq},
        {0: batch, 1: total},
        {0: batch, 1: seq},
        tuple({0: batch, 2: past_len} for _ in range(2 * L)),
    )
    os.makedirs(os.path.join(args.out, "onnx"), exist_ok=True)
    path = os.path.join(args.out, "onnx", "model.onnx")
    with torch.no_grad():
        torch.onnx.export(
            wrap,
            (ids, mask, pos, *past),
            path,
            input_names=["input_ids", "attention_mask", "position_ids", *names_past],
            output_names=["logits", *names_present],
            dynamic_shapes=shapes,
            dynamo=True,
            external_data=False,
        )
    for f in ("config.json", "generation_config.json"):
        src = os.path.join(args.model, f)
        if os.path.exists(src):
            shutil.copy(src, os.path.join(args.out, f))
    # the check: onnxruntime on the file against transformers, an empty cache and then one token
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    prompt = torch.tensor([[3, 17, 42, 5, 9], [8, 8, 1, 2, 3]])
    Bp, Sp = prompt.shape
    feeds = {
        "input_ids": prompt.numpy(),
        "attention_mask": torch.ones(Bp, Sp, dtype=torch.int64).numpy(),
        "position_ids": torch.arange(Sp).unsqueeze(0).expand(Bp, Sp).contiguous().numpy(),
    }
    for n in names_past:
        feeds[n] = torch.zeros(Bp, KVH, 0, hd).numpy()
    got = sess.run(None, feeds)
    with torch.no_grad():
        ref = model(input_ids=prompt, use_cache=True)
    d1 = float((torch.from_numpy(got[0]) - ref.logits).abs().max())
    nxt = ref.logits[:, -1].argmax(-1, keepdim=True)
    feeds2 = {
        "input_ids": nxt.numpy(),
        "attention_mask": torch.ones(Bp, Sp + 1, dtype=torch.int64).numpy(),
        "position_ids": torch.full((Bp, 1), Sp).numpy(),
    }
    for n, t in zip(names_past, got[1:]):
        feeds2[n] = t
    got2 = sess.run(None, feeds2)
    with torch.no_grad():
        ref2 = model(input_ids=nxt, past_key_values=ref.past_key_values, use_cache=True)
    d2 = float((torch.from_numpy(got2[0]) - ref2.logits).abs().max())
    print(json.dumps({"onnx": path, "prompt_logits_max_diff": d1, "cached_logits_max_diff": d2,
                      "torch": torch.__version__, "onnxruntime": ort.__version__}))
    if max(d1, d2) > 1e-4:
        raise SystemExit(f"the ONNX decoder is {max(d1, d2):.2e} from transformers")


if __name__ == "__main__":
    main()
