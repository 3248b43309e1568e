// The row reductions' two implementations, chosen per runtime (Runtime.subgroups): a kernel that
// reduces across its workgroup (norms, the log-softmax head, the grad norm) calls wgSum / wgSum2 /
// wgMax with a `Lane` from its entry point, and gets them from reduce-subgroup.wgsl (subgroupAdd,
// where the device has `subgroups`) or reduce-workgroup.wgsl (a tree in workgroup memory, the
// fallback). Tested by kernels/reduce.gpu.test.ts (both, against the CPU references).
import subgroupSrc from "./reduce-subgroup.wgsl?raw";
import workgroupSrc from "./reduce-workgroup.wgsl?raw";

const made = new Map<string, Map<string, string>>();

/**
 * `src` with the reduction functions prepended (the subgroup ones when `subgroups`, told the
 * adapter's smallest subgroup size so a workgroup no larger skips the barrier). `enable`
 * directives of `src` move to the top, as WGSL wants them before any declaration.
 */
export function withReductions(src: string, subgroups: boolean, minSubgroupSize = 0): string {
  // keyed by the source, then the mode: a key joined from the source would be built and hashed per dispatch
  let forSrc = made.get(src);
  if (!forSrc) {
    forSrc = new Map();
    made.set(src, forSrc);
  }
  const key = subgroups ? `s${minSubgroupSize}` : "w";
  let code = forSrc.get(key);
  if (!code) {
    const lines = src.split("\n");
    const enables = lines.filter((l) => /^\s*enable\s/.test(l));
    const rest = lines.filter((l) => !/^\s*enable\s/.test(l));
    const prelude = subgroups
      ? subgroupSrc.replace(
          "const REDUCE_MIN_SUBGROUP = 0u;",
          `const REDUCE_MIN_SUBGROUP = ${minSubgroupSize >>> 0}u;`,
        )
      : workgroupSrc;
    const preEnables = prelude.split("\n").filter((l) => /^\s*enable\s/.test(l));
    const preRest = prelude.split("\n").filter((l) => !/^\s*enable\s/.test(l));
    code = [...new Set([...preEnables, ...enables]), ...preRest, ...rest].join("\n");
    forSrc.set(key, code);
  }
  return code;
}
