// Public entry of config/: RunConfig schema, defaults, parsing with migrations, field
// metadata and live edits. Imports only zod and the registries of rl/algos. Tests: `npx vitest run config/`.
export * from "./edit.ts";
export * from "./meta.ts";
export * from "./migrate.ts";
export * from "./own.ts";
export * from "./presets.ts";
export * from "./schema.ts";
