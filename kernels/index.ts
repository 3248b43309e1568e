// The kernels' public surface: the runtime and every op (forward/backward pairs), for model/.
// Each op's file documents its shapes; reference.ts holds the CPU specification of each.
// Contract (see runtime.ts): tensors are Views {buffer, offset, size} in bytes, offsets multiples
// of 256 (lay out with `layout`/`alignFloats`); ops take (rt, encoderOrPass, outputs..., inputs...,
// sizes) and only record; backward ops ADD into gradients (zero them with `zero`), except
// logSoftmax's dlogits (written) and RoPE (in place); views bound to one op must not overlap;
// `rt.submit(enc)` submits and recycles the uniform arena. Integer inputs (tokens, targets) are
// int32, positions/masks/lengths uint32. Everything is deterministic (no atomics).
export * from "./attention";
export * from "./autotune";
export * from "./columns";
export * from "./decode";
export * from "./device";
export * from "./embedding";
export * from "./half";
export * from "./logsoftmax";
export * from "./matmul";
export * from "./norm";
export * from "./optim";
export * from "./plan";
export * from "./pointwise";
export * from "./qknorm";
export * from "./rope";
export * from "./runtime";
export * from "./sample";
