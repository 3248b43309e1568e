// Shows the GPU adapter the trainer worker found, or one banner that says why WebGPU is
// unusable and what still works (importing and viewing run bundles). The status goes into the
// store: Start and Step stay disabled without it.
import { useEffect } from "react";
import type { GpuStatus } from "../workers/api";
import { getTrainer } from "./engine";
import { useLab } from "./store";

export function GpuPanel() {
  const status = useLab((s) => s.gpu);
  useEffect(() => {
    const set = (gpu: GpuStatus) => useLab.setState({ gpu });
    getTrainer()
      .gpuStatus()
      .then(set, (err: Error) => set({ ok: false, reason: "worker", message: err.message }));
  }, []);
  if (!status) return <div className="gpu-panel">Looking for a GPU…</div>;
  if (!status.ok) {
    return (
      <div className="banner banner-error" role="alert" data-testid="webgpu-banner">
        <strong>WebGPU is unavailable, so training is disabled.</strong> {status.message} Run bundles can
        still be imported and viewed in the{" "}
        <button type="button" className="link" onClick={() => useLab.setState({ tab: "runs" })}>
          Runs tab
        </button>
        .
      </div>
    );
  }
  const a = status.adapter;
  return (
    <div className="gpu-panel" data-testid="adapter-info">
      <span className="label">GPU</span>{" "}
      <span data-testid="adapter-vendor">{a.vendor || "unknown vendor"}</span>
      {" · "}
      <span data-testid="adapter-architecture">{a.architecture || "unknown architecture"}</span>
      {a.description ? ` · ${a.description}` : ""}
      {a.isFallback ? " (software adapter: slow)" : ""}
      {a.plan ? <div data-testid="kernel-plan">kernels: {a.plan}</div> : null}
      <details>
        <summary>limits</summary>
        <table>
          <tbody>
            {Object.entries(a.limits).map(([k, v]) => (
              <tr key={k}>
                <td>{k}</td>
                <td>{v.toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </div>
  );
}
