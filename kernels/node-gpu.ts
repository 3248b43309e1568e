// WebGPU in Node through Dawn (the `webgpu` package), for tests, the CLI and benchmarks.
// Picks a Vulkan driver when none is set: Mesa's lavapipe if installed (about 4x faster),
// else the SwiftShader that Debian's Chromium ships (unless asked not to: the device check).
// Never imported by browser code.
import { existsSync } from "node:fs";

const ICDS = ["/usr/share/vulkan/icd.d/lvp_icd.json", "/usr/lib/chromium/vk_swiftshader_icd.json"];

let cached: GPU | undefined;

/** Dawn's polls in a row (each under 2 ms after the last) that run at once before the backoff. */
export const SPIN_POLLS = 4;

type Immediate = (fn: (...args: unknown[]) => void, ...args: unknown[]) => unknown;

/** Whether a setImmediate callback is dawn.node's poll: a native function with no name. */
function isDawnPoll(fn: (...args: unknown[]) => void): boolean {
  return fn.name === "" && Function.prototype.toString.call(fn).includes("[native code]");
}

/**
 * dawn.node waits for the GPU (mapAsync, onSubmittedWorkDone) by calling its native ProcessEvents
 * through setImmediate again and again while anything is pending: one core spinning for as long
 * as the GPU works. On a CPU adapter (lavapipe) that core is one the GPU's threads need: on 2
 * cores the lab-made Llama's RL step took 3.1-3.4 s spinning and 2.2-2.3 s without (the update
 * 2.5 s and 1.3 s). So after SPIN_POLLS polls in a row, the next are 1 ms timers. Only Dawn's
 * callbacks are rescheduled; every other setImmediate runs as before.
 */
export function dawnPollScheduler(
  immediate: Immediate,
  timeout: (fn: (...args: unknown[]) => void, ms: number, ...args: unknown[]) => unknown,
  now: () => number = () => performance.now(),
): Immediate {
  let last = Number.NEGATIVE_INFINITY;
  let streak = 0;
  return (fn, ...args) => {
    if (!isDawnPoll(fn)) return immediate(fn, ...args);
    const t = now();
    streak = t - last < 2 ? streak + 1 : 0;
    last = t;
    return streak < SPIN_POLLS ? immediate(fn, ...args) : timeout(fn, 1, ...args);
  };
}

/** Installs dawnPollScheduler as the global setImmediate, once (LAB_DAWN_SPIN=1: Dawn's own polling). */
function throttleDawnPolling(): void {
  const g = globalThis as { setImmediate: unknown; dawnPollThrottled?: boolean };
  if (g.dawnPollThrottled || process.env.LAB_DAWN_SPIN === "1") return;
  const immediate = globalThis.setImmediate;
  const throttled = dawnPollScheduler(immediate as unknown as Immediate, setTimeout as never);
  Object.assign(throttled, immediate);
  g.setImmediate = throttled;
  g.dawnPollThrottled = true;
}

/**
 * `softwareDefault: false` leaves the Vulkan loader to find every installed driver (the device
 * check, on a machine with a GPU); by default tests and benchmarks get a software driver.
 */
export async function nodeGpu(opts: { softwareDefault?: boolean } = {}): Promise<GPU> {
  if (cached) return cached;
  if (opts.softwareDefault !== false && !process.env.VK_ICD_FILENAMES && !process.env.VK_DRIVER_FILES) {
    const icd = ICDS.find((p) => existsSync(p));
    if (icd) process.env.VK_ICD_FILENAMES = icd;
  }
  throttleDawnPolling();
  const webgpu = await import("webgpu");
  Object.assign(globalThis, webgpu.globals);
  cached = webgpu.create([]) as unknown as GPU;
  return cached;
}
