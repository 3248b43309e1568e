// Node loader hook so engine code can `import src from "./op.wgsl?raw"` outside Vite (CLI,
// benchmarks): any specifier ending in `?raw` loads the file's text as a default export.
import { register } from "node:module";

register("./raw-hooks.mjs", import.meta.url);
