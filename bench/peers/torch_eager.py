"""PyTorch eager at a Hugging Face model's shape, as a line server for bench/peers.ts.

The bench writes the lab's random weights as a Hugging Face folder; this loads them with
transformers (LlamaForCausalLM through AutoModelForCausalLM, float32, eager attention) on the
CPU with a fixed thread count, then answers one JSON request per stdin line with one JSON
line, so the bench can interleave the two sides rep by rep:

  {"op": "loss", "tokens": [...], "targets": [...]}   -> {"loss": mean -log p(target)}
  {"op": "train", "tokens": [...], "targets": [...]}  -> {"s": seconds, "loss": ...}
      one step as the lab's train bench takes it: zero grads, forward, mean -log p, backward,
      clip the gradient norm to 1, AdamW (lr 1e-4, betas 0.9/0.95, eps 1e-8, wd 0.01)
  {"op": "profile_train", ...}                        -> {"table": torch.profiler's top ops}
  {"op": "decode", "prompts": [[...], ...], "n": N}   -> {"s": seconds of the N decodes}
      KV-cache decode: one prefill of the prompts, one decode (not timed), then N greedy
      decodes timed, batch = len(prompts)
"""

import argparse
import json
import sys
import time

import torch
from transformers import AutoModelForCausalLM


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32, attn_implementation="eager")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01)
    hello = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "params": sum(p.numel() for p in model.parameters()),
    }
    import transformers

    hello["transformers"] = transformers.__version__
    print(json.dumps(hello), flush=True)

    def mean_nll(tokens, targets):
        logits = model(torch.tensor([tokens])).logits[0]
        logp = torch.log_softmax(logits.float(), dim=-1)
        return -logp.gather(1, torch.tensor(targets)[:, None]).mean()

    for line in sys.stdin:
        req = json.loads(line)
        op = req["op"]
        if op == "loss":
            model.eval()
            with torch.no_grad():
                out = {"loss": mean_nll(req["tokens"], req["targets"]).item()}
        elif op == "train":
            model.train()
            t = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = mean_nll(req["tokens"], req["targets"])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            out = {"s": time.perf_counter() - t, "loss": loss.item()}
        elif op == "profile_train":
            model.train()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                opt.zero_grad(set_to_none=True)
                loss = mean_nll(req["tokens"], req["targets"])
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
            out = {"table": prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)}
        elif op == "decode":
            model.eval()
            with torch.no_grad():
                ids = torch.tensor(req["prompts"])
                res = model(ids, use_cache=True)
                cache = res.past_key_values
                nxt = res.logits[:, -1].argmax(-1, keepdim=True)
                res = model(nxt, past_key_values=cache, use_cache=True)
                nxt = res.logits[:, -1].argmax(-1, keepdim=True)
                t = time.perf_counter()
                for _ in range(req["n"]):
                    res = model(nxt, past_key_values=res.past_key_values, use_cache=True)
                    nxt = res.logits[:, -1].argmax(-1, keepdim=True)
                out = {"s": time.perf_counter() - t}
        else:
            out = {"error": f"unknown op {op!r}"}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
