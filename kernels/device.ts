// One way to get a GPUDevice, in a browser (window or worker) and in Node (see node-gpu.ts).
// Requests the adapter's real limits instead of WebGPU's defaults, reports what the adapter
// is, and turns every way this can fail into a message a person can act on.
// Tested by kernels/device.gpu.test.ts and the e2e adapter test.

/** What the UI and benchmark reports show about the adapter. */
export interface AdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** True for software rasterisers (SwiftShader, lavapipe): speeds are not representative. */
  isFallback: boolean;
  features: string[];
  limits: Record<string, number>;
  /** [min, max] subgroup size the adapter reports (0, 0 when it does not say). */
  subgroupSizes: [number, number];
  /** The kernel plan the device runs, in one line (kernels/plan.ts describePlan; set by the worker and the CLI). */
  plan?: string;
}

export interface Gpu {
  device: GPUDevice;
  adapter: AdapterSummary;
}

/** Raised when WebGPU cannot be used; `message` is written for the person at the screen. */
export class WebGPUUnavailableError extends Error {
  constructor(
    message: string,
    readonly reason: "no-api" | "no-adapter" | "missing-limit" | "missing-feature" | "device-failed",
  ) {
    super(message);
    this.name = "WebGPUUnavailableError";
  }
}

/** The limits the engine asks for at the adapter's maximum, and the least it can work with. */
export const REQUIRED_LIMITS: Record<string, number> = {
  maxStorageBufferBindingSize: 128 * 1024 * 1024,
  maxBufferSize: 128 * 1024 * 1024,
  maxStorageBuffersPerShaderStage: 8,
  maxComputeWorkgroupStorageSize: 16384,
  maxComputeInvocationsPerWorkgroup: 256,
  maxComputeWorkgroupSizeX: 256,
  maxComputeWorkgroupSizeY: 256,
  maxComputeWorkgroupsPerDimension: 65535,
};

const HINT =
  "Use a recent Chrome or Edge on a machine with a GPU (chrome://gpu shows whether WebGPU is on); " +
  "on Linux, start Chrome with --enable-unsafe-webgpu; in Firefox, set dom.webgpu.enabled to true in about:config.";

/**
 * The optional features the engine enables when the adapter has them: shader-f16 (the f16
 * weight matmul of a LoRA model's frozen base, kernels/matmul.ts; without it the base stays f32)
 * and subgroups (the row reductions, kernels/reduce.ts; without it a workgroup tree).
 */
export const ENGINE_FEATURES: GPUFeatureName[] = ["shader-f16", "subgroups"];

export interface CreateGpuOptions {
  powerPreference?: GPUPowerPreference;
  /**
   * Optional features to enable when the adapter has them; default ENGINE_FEATURES ([] for none:
   * tests get the fallback kernels on a device that lacks them).
   */
  optionalFeatures?: GPUFeatureName[];
}

/** The WGSL language features of the GPU object each device came from (createGpu records them). */
const languageFeatures = new WeakMap<GPUDevice, ReadonlySet<string>>();

/**
 * True when the device can run the subgroup reductions (kernels/reduce-subgroup.wgsl): the
 * `subgroups` feature, and the `subgroup_id` WGSL builtins (Chrome 144+, Dawn) so no kernel has to
 * assume how invocations map onto subgroups.
 */
export function canUseSubgroups(device: GPUDevice): boolean {
  const wgsl =
    languageFeatures.get(device) ??
    (globalThis as { navigator?: { gpu?: GPU } }).navigator?.gpu?.wgslLanguageFeatures;
  return device.features.has("subgroups") && !!wgsl?.has("subgroup_id");
}

/** Returns `navigator.gpu` where it exists (browser window or worker), else undefined. */
export function browserGpu(): GPU | undefined {
  const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
  return nav?.gpu;
}

export async function createGpu(gpu: GPU | undefined, options: CreateGpuOptions = {}): Promise<Gpu> {
  if (!gpu) {
    throw new WebGPUUnavailableError(`WebGPU is not available in this browser. ${HINT}`, "no-api");
  }
  const adapter = await gpu.requestAdapter({
    powerPreference: options.powerPreference ?? "high-performance",
  });
  if (!adapter) {
    throw new WebGPUUnavailableError(
      `WebGPU is present but no GPU adapter was found (requestAdapter returned null). ${HINT}`,
      "no-adapter",
    );
  }
  const requiredLimits: Record<string, number> = {};
  for (const [name, least] of Object.entries(REQUIRED_LIMITS)) {
    const has = (adapter.limits as unknown as Record<string, number>)[name];
    if (has === undefined || has < least) {
      throw new WebGPUUnavailableError(
        `This GPU's WebGPU limit ${name} is ${has ?? "missing"}, but the lab needs at least ${least}.`,
        "missing-limit",
      );
    }
    requiredLimits[name] = has;
  }
  const features = (options.optionalFeatures ?? ENGINE_FEATURES).filter((f) => adapter.features.has(f));
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ requiredLimits, requiredFeatures: features });
  } catch (err) {
    throw new WebGPUUnavailableError(
      `The GPU adapter refused to create a device: ${(err as Error).message}`,
      "device-failed",
    );
  }
  languageFeatures.set(device, new Set(gpu.wgslLanguageFeatures ?? []));
  return { device, adapter: summarizeAdapter(adapter, device) };
}

/**
 * A software adapter: one the browser marks as a fallback (`isFallbackAdapter`; Firefox's wgpu
 * reports empty vendor/architecture/description strings, so only the flag tells), or one whose
 * info names a software rasteriser (SwiftShader, lavapipe, llvmpipe).
 */
export function isSoftwareAdapter(
  info: (Partial<GPUAdapterInfo> & { isFallbackAdapter?: boolean }) | undefined,
  adapter?: GPUAdapter,
): boolean {
  if (info?.isFallbackAdapter === true) return true;
  if ((adapter as { isFallbackAdapter?: boolean } | undefined)?.isFallbackAdapter === true) return true;
  const text = `${info?.vendor ?? ""} ${info?.architecture ?? ""} ${info?.description ?? ""} ${info?.device ?? ""}`;
  return /swiftshader|llvmpipe|lavapipe|software/i.test(text);
}

/** The limits that identify an adapter beside its info and features (adapterKey). */
export const KEY_LIMITS = [
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupSizeX",
  "maxStorageBufferBindingSize",
  "maxBufferSize",
  "maxStorageBuffersPerShaderStage",
] as const;

/**
 * What identifies an adapter, for caches of what was measured on it (the matmul tile): its info
 * strings, whether it is a fallback, its features and the limits that shape kernels. Info alone is
 * not enough: Firefox gives empty strings for every adapter.
 */
export function adapterKey(device: GPUDevice): string {
  const info = (device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo;
  const strings = [info?.vendor, info?.architecture, info?.device, info?.description].map((x) => x ?? "");
  const limits = device.limits as unknown as Record<string, number | undefined>;
  return [
    ...strings,
    isSoftwareAdapter(info) ? "fallback" : "hardware",
    [...(device.features ?? [])].sort().join(","),
    KEY_LIMITS.map((n) => `${n}=${limits?.[n] ?? ""}`).join(","),
  ].join("|");
}

function summarizeAdapter(adapter: GPUAdapter, device: GPUDevice): AdapterSummary {
  const info = (adapter as GPUAdapter & { info?: GPUAdapterInfo }).info;
  const vendor = info?.vendor ?? "";
  const architecture = info?.architecture ?? "";
  const description = info?.description ?? "";
  const deviceName = info?.device ?? "";
  const limits: Record<string, number> = {};
  for (const name of Object.keys(REQUIRED_LIMITS)) {
    limits[name] = (device.limits as unknown as Record<string, number>)[name];
  }
  return {
    vendor,
    architecture,
    device: deviceName,
    description,
    isFallback: isSoftwareAdapter(info, adapter),
    features: [...device.features].sort(),
    limits,
    subgroupSizes: [
      (info as { subgroupMinSize?: number } | undefined)?.subgroupMinSize ?? 0,
      (info as { subgroupMaxSize?: number } | undefined)?.subgroupMaxSize ?? 0,
    ],
  };
}
