// A policy loss that exists only for the registry test (rl/algos/new-loss.test.ts): one file
// with its function and its entry, as a real new loss is written. Its loss is vanilla policy
// gradient; its names for verl and TRL are made up, so the test sees them carried through.
import { vanillaPg } from "../rl/algos/policy-clip.ts";
import type { PolicyLossEntry } from "../rl/algos/policy-loss.ts";

export const FAKE_POLICY_LOSS: PolicyLossEntry = {
  name: "fake-pg",
  summary: "A test-only loss: plain policy gradient under a new name.",
  paper: "Fake Loss for Registry Tests arXiv 0000.00000",
  fn: vanillaPg,
  traits: { rowScale: "mean" },
  verl: { status: "mapped", name: "fake_verl_mode", how: "the test's made-up verl loss_mode" },
  trl: {
    status: "mapped",
    name: "fake_trl",
    lossType: "fake_trl",
    level: "sequence",
    how: "the test's made-up TRL loss_type",
  },
};
