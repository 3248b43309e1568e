// CPU test: which adapters are software, and what identifies an adapter for the tile cache.
// Firefox (wgpu) returns empty vendor/architecture/description strings and marks a software
// adapter only with isFallbackAdapter. Run: npx vitest run --project unit kernels/adapter
import { describe, expect, it } from "vitest";
import { adapterKey, isSoftwareAdapter } from "./device";

function fakeDevice(
  info: Partial<GPUAdapterInfo> & { isFallbackAdapter?: boolean },
  features: string[] = [],
  limits: Record<string, number> = {},
): GPUDevice {
  return { adapterInfo: info, features: new Set(features), limits } as unknown as GPUDevice;
}

describe("software adapters", () => {
  it("an adapter with empty info and isFallbackAdapter true is software", () => {
    const info = { vendor: "", architecture: "", description: "", device: "", isFallbackAdapter: true };
    expect(isSoftwareAdapter(info)).toBe(true);
    expect(isSoftwareAdapter({ ...info, isFallbackAdapter: false })).toBe(false);
    expect(isSoftwareAdapter(undefined)).toBe(false);
  });

  it("the older flag on the adapter itself counts too", () => {
    const adapter = { isFallbackAdapter: true } as unknown as GPUAdapter;
    expect(isSoftwareAdapter({ vendor: "" }, adapter)).toBe(true);
  });

  it("named software rasterisers are software without the flag", () => {
    expect(isSoftwareAdapter({ vendor: "google", architecture: "swiftshader" })).toBe(true);
    expect(isSoftwareAdapter({ vendor: "mesa", description: "llvmpipe (LLVM 15.0.6, 256 bits)" })).toBe(true);
    expect(isSoftwareAdapter({ vendor: "nvidia", architecture: "hopper" })).toBe(false);
  });
});

describe("adapterKey", () => {
  it("tells apart adapters whose info strings are all empty, by fallback, features and limits", () => {
    const empty = { vendor: "", architecture: "", description: "", device: "" };
    const gpu = fakeDevice(empty, ["shader-f16", "subgroups"], { maxComputeWorkgroupStorageSize: 32768 });
    const soft = fakeDevice({ ...empty, isFallbackAdapter: true }, [], {
      maxComputeWorkgroupStorageSize: 32768,
    });
    const small = fakeDevice(empty, ["shader-f16", "subgroups"], { maxComputeWorkgroupStorageSize: 16384 });
    const keys = new Set([adapterKey(gpu), adapterKey(soft), adapterKey(small)]);
    expect(keys.size).toBe(3);
    expect(adapterKey(soft)).toContain("fallback");
  });

  it("is the same for the same adapter, whatever the order its features are listed in", () => {
    const info = { vendor: "mesa", architecture: "", description: "llvmpipe", device: "" };
    const a = fakeDevice(info, ["subgroups", "shader-f16"], { maxBufferSize: 1 << 30 });
    const b = fakeDevice(info, ["shader-f16", "subgroups"], { maxBufferSize: 1 << 30 });
    expect(adapterKey(a)).toBe(adapterKey(b));
  });
});
