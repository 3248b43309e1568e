// Builds the device-check bundle: `npm run build:device-check` -> dist/device-check.tar.xz, for a
// machine with a GPU, a Vulkan driver and PyTorch but no Node, no network and about 64 MiB of room.
// In it (dist/device-check/): check.mjs (bench/device/check.ts and all it imports, one esbuild
// file, WGSL inlined), sandbox-worker.mjs + QuickJS's wasm, this machine's Node binary, Dawn's
// dawn.node (from node_modules/webgpu), the Vulkan loader (Debian's libvulkan1, as installed here,
// used only where the target lacks one), the quick-demo recipe and its SFT checkpoint, and
// torch_baseline.py. Fails when the archive is over the budget. Run it with bench/device-check.sh.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const DIST = join(ROOT, "dist");
const OUT = join(DIST, "device-check");
const ARCHIVE = join(DIST, "device-check.tar.xz");
const BUDGET = 64 * 1024 * 1024;

/** `import src from "./op.wgsl?raw"`: the file's text, as Vite and cli/raw-loader.mjs give it. */
const raw = {
  name: "raw",
  setup(b) {
    b.onResolve({ filter: /\?raw$/ }, (a) => ({
      path: resolve(a.resolveDir, a.path.slice(0, -4)),
      namespace: "raw",
    }));
    b.onLoad({ filter: /.*/, namespace: "raw" }, (a) => ({
      contents: readFileSync(a.path, "utf8"),
      loader: "text",
    }));
  },
};

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
const common = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  plugins: [raw],
  logLevel: "warning",
  // CommonJS dependencies inside an ES module bundle still call require()
  banner: {
    js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
  },
};
await build({
  ...common,
  entryPoints: [join(ROOT, "bench/device/check.ts")],
  outfile: join(OUT, "check.mjs"),
});
await build({
  ...common,
  entryPoints: [join(ROOT, "bench/device/sandbox-worker.ts")],
  outfile: join(OUT, "sandbox-worker.mjs"),
});

const put = (from, to) => {
  mkdirSync(dirname(join(OUT, to)), { recursive: true });
  copyFileSync(from, join(OUT, to));
};
put(realpathSync(process.execPath), "node");
put(
  join(ROOT, `node_modules/webgpu/dist/${process.platform}-${process.arch}/dawn.node`),
  `dist/${process.platform}-${process.arch}/dawn.node`,
);
put(
  join(ROOT, "node_modules/@jitl/quickjs-wasmfile-release-sync/dist/emscripten-module.wasm"),
  "emscripten-module.wasm",
);
put(join(ROOT, "public/recipes/quick-demo.json"), "public/recipes/quick-demo.json");
// the checkpoint the recipe starts from (its path is relative to public/)
const ckpt = JSON.parse(readFileSync(join(ROOT, "public/recipes/quick-demo.json"), "utf8")).config.sft
  .init_checkpoint;
if (ckpt) put(join(ROOT, "public", ckpt), join("public", ckpt));
put(join(ROOT, "bench/device/torch_baseline.py"), "torch_baseline.py");

// The Vulkan loader: the files of Debian's libvulkan1 package as installed here.
let loader = "";
try {
  const files = execFileSync("dpkg", ["-L", "libvulkan1"], { encoding: "utf8" }).split("\n");
  const lib = files.find((f) => /libvulkan\.so\.1\.\d/.test(f) && existsSync(f));
  const copyright = files.find((f) => f.endsWith("/copyright"));
  if (lib) {
    put(lib, "lib/libvulkan.so.1");
    if (copyright) put(copyright, "lib/libvulkan1.copyright");
    const version = execFileSync("dpkg-query", ["-W", "-f=$" + "{Version}", "libvulkan1"], {
      encoding: "utf8",
    });
    loader = `libvulkan1 ${version}`;
  }
} catch {
  // not Debian: no bundled loader; device-check.sh then needs the target's own
}

execFileSync("tar", ["-cJf", ARCHIVE, "-C", DIST, "device-check"], {
  env: { ...process.env, XZ_OPT: "-6 -T2" },
});
const mib = (n) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
const size = statSync(ARCHIVE).size;
const unpacked = execFileSync("du", ["-sb", OUT], { encoding: "utf8" }).split("\t")[0];
console.log(
  `${ARCHIVE}: ${mib(size)} (unpacked ${mib(Number(unpacked))}; Node ${process.version}, ${loader || "no Vulkan loader bundled"})`,
);
if (size > BUDGET) {
  console.error(`over the ${mib(BUDGET)} budget`);
  process.exit(1);
}
