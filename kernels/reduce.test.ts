// withReductions (kernels/reduce.ts) as text: the right prelude, the adapter's smallest subgroup
// size written in, and every `enable` moved to the top once. The kernels themselves:
// reduce.gpu.test.ts. Run: npx vitest run --project unit kernels/reduce
import { describe, expect, it } from "vitest";
import { withReductions } from "./reduce";

const kernel = "enable f16;\noverride WG: u32 = 64;\nfn k(lane: Lane) -> f32 { return wgSum(1.0, lane); }";

describe("withReductions", () => {
  it("prepends the subgroup version with the size, enables first and once", () => {
    const code = withReductions(kernel, true, 8);
    const lines = code.split("\n");
    expect(lines.slice(0, 2)).toEqual(["enable subgroups;", "enable f16;"]);
    expect(lines.filter((l) => l.startsWith("enable")).length).toBe(2);
    expect(code).toContain("const REDUCE_MIN_SUBGROUP = 8u;");
    expect(code).toContain("subgroupAdd");
    expect(code.indexOf("fn wgSum(")).toBeLessThan(code.indexOf("fn k("));
    expect(
      withReductions(`enable subgroups;\n${kernel}`, true, 8)
        .split("\n")
        .filter((l) => l.startsWith("enable")),
    ).toEqual(["enable subgroups;", "enable f16;"]);
  });

  it("prepends the workgroup tree without subgroups, and caches per variant", () => {
    const code = withReductions(kernel, false);
    expect(code.split("\n")[0]).toBe("enable f16;");
    expect(code).not.toContain("enable subgroups");
    expect(code).not.toContain("subgroupAdd(");
    expect(code).toContain("fn wgSum(");
    expect(withReductions(kernel, false)).toBe(code);
    expect(withReductions(kernel, true, 4)).toContain("const REDUCE_MIN_SUBGROUP = 4u;");
  });
});
