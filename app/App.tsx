import { GpuPanel } from "./GpuPanel";

export function App() {
  return (
    <div className="app">
      <header className="topbar">
        <h1>Agentic RL Lab</h1>
        <GpuPanel />
      </header>
    </div>
  );
}
