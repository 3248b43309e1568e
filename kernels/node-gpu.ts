// WebGPU in Node through Dawn (the `webgpu` package), for tests, the CLI and benchmarks.
// Picks a Vulkan driver when none is set: Mesa's lavapipe if installed (about 4x faster),
// else the SwiftShader that Debian's Chromium ships. Never imported by browser code.
import { existsSync } from "node:fs";

const ICDS = ["/usr/share/vulkan/icd.d/lvp_icd.json", "/usr/lib/chromium/vk_swiftshader_icd.json"];

let cached: GPU | undefined;

export async function nodeGpu(): Promise<GPU> {
  if (cached) return cached;
  if (!process.env.VK_ICD_FILENAMES && !process.env.VK_DRIVER_FILES) {
    const icd = ICDS.find((p) => existsSync(p));
    if (icd) process.env.VK_ICD_FILENAMES = icd;
  }
  const webgpu = await import("webgpu");
  Object.assign(globalThis, webgpu.globals);
  cached = webgpu.create([]) as unknown as GPU;
  return cached;
}
