# A by-hand check of an export with the Python libraries verl itself uses (not part of
# npm test: they are not installed there). Each part runs when its library is importable.
#   python3 export/tools/check-export.py DIR [VERL_GENERATED_PPO_TRAINER_YAML]
# - datasets/pyarrow: train.parquet and val.parquet load with datasets.load_dataset("parquet"),
#   as verl's RLHFDataset loads them, and their rows have verl's fields and types.
# - omegaconf: tool_config.yaml loads and resolves (SANDBOX_FUSION_URL interpolation) as verl's
#   initialize_tools_from_config does; config.yaml (less hydra/defaults) merges into verl's
#   flattened ppo_trainer config in struct mode, so an unknown key is an error there too.
import json
import os
import sys

out = os.path.abspath(sys.argv[1])
checks = []

try:
    import datasets

    for split in ("train", "val"):
        ds = datasets.load_dataset("parquet", data_files=os.path.join(out, split + ".parquet"))["train"]
        row = ds[0]
        assert isinstance(row["prompt"], list) and isinstance(row["prompt"][0], dict), row["prompt"]
        assert set(row["prompt"][0]) == {"role", "content"}
        assert isinstance(row["reward_model"]["ground_truth"], str)
        assert row["agent_name"] == "tool_agent"
        assert isinstance(row["extra_info"]["tools_kwargs"], dict)
        assert isinstance(row["extra_info"]["index"], int)
        checks.append(f"datasets {datasets.__version__}: {split}.parquet {len(ds)} rows, columns {sorted(ds.column_names)}")
except ImportError:
    checks.append("datasets: not installed, skipped")

try:
    import omegaconf
    from omegaconf import OmegaConf

    os.environ.setdefault("SANDBOX_FUSION_URL", "http://sandbox.example:8080/run_code")
    tools = OmegaConf.load(os.path.join(out, "tool_config.yaml"))
    for t in tools.tools:
        cfg = OmegaConf.to_container(t.config, resolve=True)
        assert cfg["sandbox_fusion_url"] == os.environ["SANDBOX_FUSION_URL"], cfg
        OmegaConf.to_container(t.tool_schema, resolve=True)
    checks.append(f"omegaconf {omegaconf.__version__}: tool_config.yaml resolves ({len(tools.tools)} tools)")
    if len(sys.argv) > 2:
        base = OmegaConf.load(sys.argv[2])
        OmegaConf.set_struct(base, True)
        ours = OmegaConf.load(os.path.join(out, "config.yaml"))
        ours.pop("hydra")
        ours.pop("defaults")
        merged = OmegaConf.merge(base, ours)
        n = len(json.dumps(OmegaConf.to_container(merged, resolve=False)))
        checks.append(f"omegaconf: config.yaml merges into verl's ppo_trainer in struct mode ({n} chars)")
except ImportError:
    checks.append("omegaconf: not installed, skipped")

print("\n".join(checks))
