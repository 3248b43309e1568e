// GPU test: a real device through Dawn in Node, and a WGSL kernel whose numbers are checked.
import { describe, expect, it } from "vitest";
import { createGpu, WebGPUUnavailableError } from "./device";
import { nodeGpu } from "./node-gpu";

describe("device", () => {
  it("creates a device with the adapter's real limits and reports the adapter", async () => {
    const { device, adapter } = await createGpu(await nodeGpu());
    expect(adapter.limits.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 * 1024 * 1024);
    expect(typeof adapter.vendor).toBe("string");
    device.destroy();
  });

  it("explains a missing WebGPU API and a missing adapter", async () => {
    await expect(createGpu(undefined)).rejects.toThrow(/WebGPU is not available/);
    const noAdapter = { requestAdapter: async () => null } as unknown as GPU;
    const err = await createGpu(noAdapter).catch((e) => e);
    expect(err).toBeInstanceOf(WebGPUUnavailableError);
    expect(err.reason).toBe("no-adapter");
  });

  it("runs a WGSL kernel and returns the right numbers", async () => {
    const { device } = await createGpu(await nodeGpu());
    const n = 1000;
    const a = Float32Array.from({ length: n }, (_, i) => i * 0.5);
    const buf = device.createBuffer({
      size: n * 4,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    device.queue.writeBuffer(buf, 0, a);
    const module = device.createShaderModule({
      code: `@group(0) @binding(0) var<storage, read_write> x: array<f32>;
        @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3u) {
          if (id.x < arrayLength(&x)) { x[id.x] = x[id.x] * x[id.x] + 1.0; }
        }`,
    });
    const pipeline = device.createComputePipeline({
      layout: "auto",
      compute: { module, entryPoint: "main" },
    });
    const read = device.createBuffer({
      size: n * 4,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(
      0,
      device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [{ binding: 0, resource: { buffer: buf } }],
      }),
    );
    pass.dispatchWorkgroups(Math.ceil(n / 64));
    pass.end();
    enc.copyBufferToBuffer(buf, 0, read, 0, n * 4);
    device.queue.submit([enc.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const got = new Float32Array(read.getMappedRange().slice(0));
    for (let i = 0; i < n; i++) expect(got[i]).toBe(a[i] * a[i] + 1);
    device.destroy();
  });
});
