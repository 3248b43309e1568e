// WebGPU in Node through Dawn (the `webgpu` package), for tests, the CLI and benchmarks.
// Picks a Vulkan driver when none is set: Mesa's lavapipe if installed (about 4x faster),
// else the SwiftShader that Debian's Chromium ships (unless asked not to: the device check).
// Never imported by browser code.
import { existsSync } from "node:fs";

const ICDS = ["/usr/share/vulkan/icd.d/lvp_icd.json", "/usr/lib/chromium/vk_swiftshader_icd.json"];

let cached: GPU | undefined;

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
  const webgpu = await import("webgpu");
  Object.assign(globalThis, webgpu.globals);
  cached = webgpu.create([]) as unknown as GPU;
  return cached;
}
