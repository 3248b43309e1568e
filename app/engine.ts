// The one place the UI talks to the engine: starts the trainer worker and wraps it with comlink.
import * as Comlink from "comlink";
import type { TrainerApi } from "../workers/api";

let trainer: Comlink.Remote<TrainerApi> | undefined;

export function getTrainer(): Comlink.Remote<TrainerApi> {
  trainer ??= Comlink.wrap<TrainerApi>(
    new Worker(new URL("../workers/trainer.worker.ts", import.meta.url), {
      type: "module",
      // the page's `plan=` URL parameter forces a kernel plan (kernels/plan.ts planOverride)
      name: `plan=${new URLSearchParams(globalThis.location?.search ?? "").get("plan") ?? ""}`,
    }),
  );
  return trainer;
}
