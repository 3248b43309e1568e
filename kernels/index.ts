// The kernels' public surface: the runtime and every op (forward/backward pairs), for model/.
// Each op's file documents its shapes; reference.ts holds the CPU specification of each.
export * from "./attention";
export * from "./device";
export * from "./embedding";
export * from "./logsoftmax";
export * from "./matmul";
export * from "./norm";
export * from "./optim";
export * from "./pointwise";
export * from "./rope";
export * from "./runtime";
export * from "./sample";
