// What a cluster run needs that the lab cannot give it. A value an engine would otherwise fill
// with its own default (verl's model.path default is a 7B chat model, its adv_estimator gae) is
// a required argument of the export's launcher instead: run.sh and train_trl.py stop with a
// message naming it. Used by export/verl.ts and export/trl.ts.
import type { RunConfig } from "../config/schema.ts";
import { pretrainedSource, REGISTRY_DECISIONS } from "./mapping.ts";

/** A value the export cannot write: the launcher flag that gives it, and why it is needed. */
export interface Required {
  /** The engine key it fills (verl's dotted key; TRL: the script's argument). */
  key: string;
  /** The launcher's flag (run.sh, train_trl.py). */
  flag: string;
  /** The environment variable config.yaml reads it from when run.sh is not the launcher. */
  env: string;
  why: string;
}

/**
 * The model a cluster can load: a Hub repo id as it is. A folder (a preset's `models/lab-llama`
 * inside the lab's public/ folder, a CLI --model path, files picked in the page) is not on the
 * cluster: the person copies it there and names it.
 */
export function clusterModel(c: RunConfig): { path: string } | { path: null; why: string } {
  const p = c.model.pretrained;
  if (p?.startsWith("hf:")) return { path: p.slice(3) };
  const src = pretrainedSource(c);
  if (src === null)
    return {
      path: null,
      why: "the lab's tiny from-scratch model has no Hugging Face checkpoint: pass a Hugging Face model (a Hub id or a folder)",
    };
  if (p?.startsWith("local:"))
    return {
      path: null,
      why: `the model is files picked in the page (folder "${src}"): copy that folder to the cluster and pass its path`,
    };
  const preset = !src.startsWith("/") && !src.startsWith(".");
  return {
    path: null,
    why: `the model is the folder "${src}" on the machine that ran the lab${preset ? ` (a preset's model: public/${src} in the lab's repository)` : ""}: copy it to the cluster and pass its path`,
  };
}

/** The values the run needs that the export cannot write, for verl. */
export function verlRequired(c: RunConfig): Required[] {
  const out: Required[] = [];
  const m = clusterModel(c);
  if (m.path === null)
    out.push({ key: "actor_rollout_ref.model.path", flag: "--model", env: "LAB_MODEL_PATH", why: m.why });
  const adv = REGISTRY_DECISIONS.advantage[c.rl.advantage];
  if (adv?.status === "unmapped")
    out.push({
      key: "algorithm.adv_estimator",
      flag: "--adv-estimator",
      env: "LAB_ADV_ESTIMATOR",
      why: `verl has no ${c.rl.advantage} estimator: name the verl estimator to run instead (${adv.how})`,
    });
  return out;
}

/** The OmegaConf value config.yaml holds for a required key: its environment variable, no default. */
export const requiredValue = (r: Required) => `\${oc.env:${r.env}}`;
