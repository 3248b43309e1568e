// Browser side of the "shapes" bench group's SwiftShader rows (bundled by bench/shapes.ts with
// Vite, loaded in headless Chromium): the same measurements as the Node rows
// (bench/shapes-measure.ts) at sizes SwiftShader finishes, on the page's adapter. Exposes
// globalThis.shapesBench(spec).
import { browserGpu, createGpu } from "../kernels/device";
import { Runtime } from "../kernels/runtime";
import { type AttentionMeasure, type DecodeMeasure, measureAttention, measureDecode } from "./shapes-measure";

export interface ShapesPageSpec {
  decode: { layers: number; tokens: number; reps: number };
  attention: { B: number; T: number; reps: number };
}

export interface ShapesPageResult {
  adapter: { vendor: string; architecture: string; description: string; isFallback: boolean };
  storageBytes: number;
  decode: DecodeMeasure;
  attention: AttentionMeasure;
}

async function bench(spec: ShapesPageSpec): Promise<ShapesPageResult> {
  const { device, adapter } = await createGpu(browserGpu());
  const rt = new Runtime(device);
  try {
    const d = spec.decode;
    const decode = await measureDecode(rt, d.layers, d.tokens, d.reps);
    const a = spec.attention;
    const attention = await measureAttention(rt, a.B, a.T, a.reps);
    return {
      adapter: {
        vendor: adapter.vendor,
        architecture: adapter.architecture,
        description: adapter.description,
        isFallback: adapter.isFallback,
      },
      storageBytes: rt.maxWorkgroupStorageBytes,
      decode,
      attention,
    };
  } finally {
    device.destroy();
  }
}

(globalThis as unknown as { shapesBench: typeof bench }).shapesBench = bench;
