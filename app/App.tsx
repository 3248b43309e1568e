// The lab's page: top bar (controls, progress, GPU), the config panel on the left, and the
// main area with tabs: charts, trajectory inspector, try the model, reward editor, runs, environment. The
// main area comes first in the document, so tabs and charts come before the config in tab
// order; on a narrow screen the config is a drawer opened from the tab bar.
import { ChartGrid } from "./ChartGrid";
import { ConfigPanel } from "./ConfigPanel";
import { EnvironmentEditor } from "./EnvironmentEditor";
import { ErrorBoundary } from "./ErrorBoundary";
import { ExportRun } from "./ExportRun";
import { Inspector } from "./Inspector";
import { RewardEditor } from "./RewardEditor";
import { ResumeBanner, RewardErrorBanner } from "./RunBanners";
import { RunsList } from "./RunsList";
import { ShareLink } from "./ShareLink";
import { useShortcuts } from "./shortcuts";
import { useLab, type ViewSlice } from "./store";
import { TopBar } from "./TopBar";
import { TryModelPanel } from "./TryModelPanel";

const TABS: { id: ViewSlice["tab"]; title: string }[] = [
  { id: "charts", title: "Charts" },
  { id: "inspector", title: "Inspector" },
  { id: "try", title: "Try the model" },
  { id: "reward", title: "Reward editor" },
  { id: "runs", title: "Runs" },
  { id: "environment", title: "Environment" },
];

export function App() {
  useShortcuts();
  const tab = useLab((s) => s.tab);
  const drawer = useLab((s) => s.drawer);
  return (
    <div className="app">
      <ErrorBoundary name="Top bar">
        <TopBar />
      </ErrorBoundary>
      <ErrorList />
      <ErrorBoundary name="Run banners">
        <ResumeBanner />
        <RewardErrorBanner />
      </ErrorBoundary>
      <ErrorBoundary name="Share link">
        <ShareLink />
      </ErrorBoundary>
      <ErrorBoundary name="Export">
        <ExportRun />
      </ErrorBoundary>
      <div className={`layout${drawer ? " drawer-open" : ""}`}>
        <main className="main">
          <div className="tabs" role="tablist">
            <button
              type="button"
              className="drawer-toggle"
              data-testid="drawer-toggle"
              aria-expanded={drawer}
              aria-controls="config-panel"
              onClick={() => useLab.setState({ drawer: !drawer })}
            >
              ☰ Config
            </button>
            {TABS.map((t, i) => (
              <button
                key={t.id}
                type="button"
                role="tab"
                aria-selected={tab === t.id}
                data-testid={`tab-${t.id}`}
                className={tab === t.id ? "active" : ""}
                title={`${t.title} (${i + 1})`}
                onClick={() => useLab.setState({ tab: t.id })}
              >
                {t.title}
              </button>
            ))}
          </div>
          {/* Charts stay mounted (hidden) so they keep their zoom and catch up cheaply. */}
          <div hidden={tab !== "charts"}>
            <ErrorBoundary name="Charts">
              <ChartGrid />
            </ErrorBoundary>
          </div>
          {tab === "inspector" && (
            <ErrorBoundary name="Inspector">
              <Inspector />
            </ErrorBoundary>
          )}
          {tab === "try" && (
            <ErrorBoundary name="Try the model">
              <TryModelPanel />
            </ErrorBoundary>
          )}
          {tab === "reward" && (
            <ErrorBoundary name="Reward editor">
              <RewardEditor />
            </ErrorBoundary>
          )}
          {tab === "environment" && (
            <ErrorBoundary name="Environment">
              <EnvironmentEditor />
            </ErrorBoundary>
          )}
          {tab === "runs" && (
            <ErrorBoundary name="Runs">
              <RunsList />
            </ErrorBoundary>
          )}
        </main>
        <ErrorBoundary name="Config panel">
          <ConfigPanel />
        </ErrorBoundary>
      </div>
    </div>
  );
}

function ErrorList() {
  const errors = useLab((s) => s.errors);
  if (errors.length === 0) return null;
  return (
    <div className="errors">
      {errors.map((e, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: messages may repeat
        <div key={i} className="banner banner-error" role="alert" data-testid="app-error">
          {e}{" "}
          <button
            type="button"
            onClick={() => useLab.setState((s) => ({ errors: s.errors.filter((_, j) => j !== i) }))}
          >
            dismiss
          </button>
        </div>
      ))}
    </div>
  );
}
