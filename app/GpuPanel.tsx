// Shows the GPU adapter the trainer worker found, or a banner that says why WebGPU is unusable.
import { useEffect, useState } from "react";
import type { GpuStatus } from "../workers/api";
import { getTrainer } from "./engine";

export function GpuPanel() {
  const [status, setStatus] = useState<GpuStatus | undefined>();
  useEffect(() => {
    getTrainer()
      .gpuStatus()
      .then(setStatus, (err: Error) => setStatus({ ok: false, reason: "worker", message: err.message }));
  }, []);
  if (!status) return <div className="gpu-panel">Looking for a GPU…</div>;
  if (!status.ok) {
    return (
      <div className="banner banner-error" role="alert" data-testid="webgpu-banner">
        <strong>WebGPU is unavailable, so training is disabled.</strong> {status.message}
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
