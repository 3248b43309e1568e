// Adding a policy loss is one file and one registry entry: with testing/fake-policy-loss.ts's
// entry appended to POLICY_LOSSES (the one line a new loss adds to rl/algos/losses.ts), the
// schema accepts its name, the page's help lists it with its summary and paper, the verl export
// writes its loss_mode and the TRL export its loss_type and importance-sampling level. Nothing
// else is edited.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FAKE_POLICY_LOSS } from "../../testing/fake-policy-loss.ts";

type Losses = typeof import("./losses.ts");
const text = (f: string | Uint8Array) => (typeof f === "string" ? f : new TextDecoder().decode(f));

beforeAll(() => {
  vi.resetModules();
  vi.doMock("./losses.ts", async (importOriginal) => {
    const real = await importOriginal<Losses>();
    const POLICY_LOSSES = [...real.POLICY_LOSSES, FAKE_POLICY_LOSS];
    return {
      ...real,
      POLICY_LOSSES,
      POLICY_LOSS: Object.fromEntries(POLICY_LOSSES.map((e) => [e.name, e.fn])),
      policyLossEntry: (name: string) =>
        POLICY_LOSSES.find((e) => e.name === name) ?? real.policyLossEntry(name),
    };
  });
});

afterAll(() => {
  vi.doUnmock("./losses.ts");
  vi.resetModules();
});

describe("a new policy loss from its registry entry", () => {
  it("is in the schema, the page's help and both exports", async () => {
    const config = await import("../../config/index.ts");
    const { exportRun } = await import("../../export/index.ts");
    const parsed = config.parseRunConfig({ rl: { policy_loss: "fake-pg" } });
    if (!parsed.ok) throw new Error(parsed.errors.map((e) => `${e.path}: ${e.message}`).join("; "));
    expect(parsed.config.rl.policy_loss).toBe("fake-pg");

    const meta = config.FIELD_META["rl.policy_loss"];
    expect(meta.options).toContain("fake-pg");
    expect(meta.optionHelp?.["fake-pg"]).toBe(FAKE_POLICY_LOSS.summary);
    expect(meta.paper).toContain("fake-pg: Fake Loss for Registry Tests arXiv 0000.00000");

    const verl = exportRun(parsed.config, { target: "verl", name: "fake" });
    expect(text(verl.files["config.yaml"])).toMatch(/loss_mode: fake_verl_mode/);

    const trl = exportRun(parsed.config, { target: "trl", name: "fake" });
    const py = text(trl.files["train_trl.py"]);
    // GRPOConfig's arguments are a JSON string inside the script
    expect(py).toContain(String.raw`\"loss_type\":\"fake_trl\"`);
    expect(py).toContain(String.raw`\"importance_sampling_level\":\"sequence\"`);
  });

  it("still refuses a name no entry has", async () => {
    const config = await import("../../config/index.ts");
    expect(config.parseRunConfig({ rl: { policy_loss: "not-a-loss" } }).ok).toBe(false);
  });
});
