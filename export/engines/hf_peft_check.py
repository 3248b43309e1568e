# transformers and PEFT on the lab's weight exports (export/engines/hf-peft.engines.test.ts): for
# each case, the merged folder (npm run export -- hf) loaded with AutoModelForCausalLM, the adapter
# (npm run export -- peft) applied by PEFT over the base its adapter_config.json names, both ways
# PEFT offers (PeftModel.from_pretrained over that base, AutoPeftModelForCausalLM from the adapter
# alone), and the adapter README's own Python, run as written; each scores the lab's token
# sequences in float32. The merged folder's tokenizer encodes the lab's texts.
# Run with the engines venv: python export/engines/hf_peft_check.py < cases.json > scores.json
# stdin: {"cases": [{"name", "merged", "adapter", "texts": [...], "tokens": [[id, ...], ...]}]}
# stdout: {name: {"base", "merged", "peft", "auto_peft", "readme": [[log p(token t+1 | <= t)]],
#                 "tokens": the tokenizer's ids of each text}}
import json
import re
import sys

import torch
from peft import AutoPeftModelForCausalLM, PeftModel
from transformers import AutoModelForCausalLM, AutoTokenizer

torch.manual_seed(0)


@torch.no_grad()
def score(model, seqs):
    model = model.float().eval()
    out = []
    for s in seqs:
        ids = torch.tensor([s])
        logits = model(input_ids=ids).logits[0, :-1].float()
        lp = torch.log_softmax(logits, dim=-1).gather(1, ids[0, 1:, None])[:, 0]
        out.append(lp.tolist())
    return out


def readme_model(adapter):
    # The README's python block, as a user would paste it, with the adapter's folder filled in.
    text = open(f"{adapter}/README.md").read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1, f"{adapter}/README.md: {len(blocks)} python blocks"
    ns = {}
    exec(blocks[0].replace("path/to/this/folder", adapter), ns)
    return ns["model"]


def main():
    cases = json.load(sys.stdin)["cases"]
    res = {}
    for c in cases:
        seqs = c["tokens"]
        base_name = json.load(open(f"{c['adapter']}/adapter_config.json"))["base_model_name_or_path"]
        merged = AutoModelForCausalLM.from_pretrained(c["merged"], dtype=torch.float32)
        base = AutoModelForCausalLM.from_pretrained(base_name, dtype=torch.float32)
        peft = PeftModel.from_pretrained(base, c["adapter"])
        auto = AutoPeftModelForCausalLM.from_pretrained(c["adapter"], dtype=torch.float32)
        tok = AutoTokenizer.from_pretrained(c["merged"])
        res[c["name"]] = {
            "base": base_name,
            "merged": score(merged, seqs),
            "peft": score(peft, seqs),
            "auto_peft": score(auto, seqs),
            "readme": score(readme_model(c["adapter"]), seqs),
            "tokens": [tok(t, add_special_tokens=False)["input_ids"] for t in c["texts"]],
        }
    print(json.dumps(res))


if __name__ == "__main__":
    main()
