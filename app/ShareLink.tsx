// Share links: the URL hash carries the active run's config, seed and live edits (only
// non-default values, compressed and versioned by config/link.ts), kept current with
// history.replaceState as edits apply. Opening a link shows what it sets and offers Replay;
// a broken link shows a message naming what is wrong and the page goes on normally, and a hash
// that is no link at all (no "run=") says it was not understood. The hash this tab wrote for its
// own run is remembered in sessionStorage: after a reload it is not someone else's shared link
// (the resume banner, app/ResumeBanner.tsx, offers the interrupted run instead).
import { useEffect, useState } from "react";
import { type ConfigEdit, defaultRunConfig, type RunConfig } from "../config";
import { configDiff, decodeLink, encodeLink, hasLink } from "../config/link";
import { ENV_SOURCE_LINK_MAX } from "../config/task-options";
import { startRun } from "./bridge";
import { activeRun, useLab } from "./store";

type Opened =
  | { ok: true; config: RunConfig; edits: ConfigEdit[]; name?: string }
  | { ok: false; error: string; title: string };

/** sessionStorage key: the hash this tab last wrote for its own run. */
export const OWN_LINK_KEY = "lab:own-link";

function ownLink(): string | null {
  try {
    return sessionStorage.getItem(OWN_LINK_KEY);
  } catch {
    return null;
  }
}

function editsOf(events: readonly { kind: string; edit?: ConfigEdit }[]): ConfigEdit[] {
  return events.filter((e) => e.kind === "edit" && e.edit).map((e) => e.edit as ConfigEdit);
}

/** "quick-demo + 4 edits": the run's name (its preset) and how many live edits it replays. */
export function linkSummary(name: string | undefined, edits: readonly ConfigEdit[]): string {
  const base = name ?? "a custom config";
  return edits.length === 0 ? base : `${base} + ${edits.length} edit${edits.length > 1 ? "s" : ""}`;
}

/** The preset part of a run's name: "#7 quick-demo" -> "quick-demo". */
function baseName(label: string | null | undefined): string | undefined {
  const m = label ? /^#\d+\s+(.*)$/.exec(label) : null;
  return (m ? m[1] : label) || undefined;
}

/** The link the page was opened with, if any: what it sets, or what is wrong with it. */
function useOpenedLink() {
  const [opened, setOpened] = useState<Opened | null>(null);
  useEffect(() => {
    const hash = window.location.hash;
    if (hash === "" || hash === "#") return;
    if (!hasLink(hash)) {
      setOpened({
        ok: false,
        title: "This link was not understood:",
        error: `the part after # (${JSON.stringify(hash.slice(1, 41))}${hash.length > 41 ? "…" : ""}) is not a lab link; a shared run's link has #run=v… after the address. The page opened with its own config.`,
      });
      return;
    }
    if (hash === ownLink()) return;
    decodeLink(hash).then((r) =>
      setOpened(
        r.ok
          ? { ok: true, config: r.config, edits: r.edits, name: r.name }
          : { ok: false, error: r.error, title: "This link cannot be opened:" },
      ),
    );
  }, []);
  return [opened, setOpened] as const;
}

/** The URL follows the active run: its config and the edits applied so far. */
function useRunInUrl() {
  const run = useLab(activeRun);
  const events = run?.events;
  const config = run?.config;
  const label = run?.label;
  useEffect(() => {
    if (!config || !events) return;
    let live = true;
    encodeLink({ config, edits: editsOf(events), name: baseName(label) })
      .then((hash) => {
        if (!live) return;
        try {
          sessionStorage.setItem(OWN_LINK_KEY, hash);
        } catch {}
        if (window.location.hash !== hash)
          history.replaceState(null, "", `${window.location.pathname}${window.location.search}${hash}`);
      })
      .catch(() => {});
    return () => {
      live = false;
    };
  }, [config, events, label]);
}

export function ShareLink() {
  const [opened, setOpened] = useOpenedLink();
  useRunInUrl();
  const dismiss = () => setOpened(null);
  return (
    <>
      {opened && !opened.ok && (
        <div className="banner banner-error" role="alert" data-testid="link-error">
          <strong>{opened.title}</strong> {opened.error}{" "}
          <button type="button" onClick={dismiss}>
            Dismiss
          </button>
        </div>
      )}
      {opened?.ok && <LinkBanner opened={opened} onClose={dismiss} />}
    </>
  );
}

/** "3 values differ from the defaults", or "the default config". */
function diffSummary(config: RunConfig): string {
  const n = Object.keys(configDiff(config, defaultRunConfig())).length;
  return n === 0 ? "the default config" : `${n} value${n > 1 ? "s" : ""} differ from the defaults`;
}

/** What an opened link sets (its edits, the values off the defaults), with Replay and Dismiss. */
function LinkBanner({ opened, onClose }: { opened: Extract<Opened, { ok: true }>; onClose: () => void }) {
  return (
    <div className="banner" data-testid="link-banner">
      <strong data-testid="link-summary">Shared run: {linkSummary(opened.name, opened.edits)}</strong>{" "}
      <button
        type="button"
        data-testid="link-replay"
        onClick={() => {
          void startRun(opened.config, {
            edits: opened.edits,
            source: "link",
            ...(opened.name ? { name: opened.name } : {}),
          });
          onClose();
        }}
      >
        Replay
      </button>{" "}
      <button type="button" onClick={onClose}>
        Dismiss
      </button>
      {opened.edits.length > 0 && (
        <ul className="link-edits" data-testid="link-edits">
          {opened.edits.map((e, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: edits may repeat
            <li key={i}>
              {e.phase === "sft" ? "SFT" : e.phase === "rl" ? "RL" : e.phase} step {e.step}: {e.path} →{" "}
              {JSON.stringify(e.value)}
            </li>
          ))}
        </ul>
      )}
      <details className="link-config">
        <summary>{diffSummary(opened.config)}</summary>
        {Object.entries(configDiff(opened.config, defaultRunConfig()))
          .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
          .join(", ") || "the default config"}
      </details>
      <div className="muted" data-testid="link-determinism">
        A replay gives the same numbers on the same kind of adapter as the original run. On another GPU,
        driver or browser, sampling turns last-bit differences into other tokens within a step or two: the
        curves should agree in shape, not number for number.
      </div>
    </div>
  );
}

/**
 * "Copy share link", always in the top bar (disabled before a run) so that nothing moves when
 * a run starts; "Link copied" floats below it instead of pushing the page down.
 */
export function ShareButton() {
  const [copied, setCopied] = useState("");
  const run = useLab(activeRun);
  useEffect(() => {
    if (!copied) return;
    const t = setTimeout(() => setCopied(""), 4000);
    return () => clearTimeout(t);
  }, [copied]);
  async function copy() {
    if (!run) return;
    const hash = await encodeLink({
      config: run.config,
      edits: editsOf(run.events),
      name: baseName(run.label),
    });
    const url = `${window.location.origin}${window.location.pathname}${hash}`;
    // A JS environment's source travels in the link; past the stated size the link still
    // replays, but chat apps and mail may cut it, and the bundle carries it whole.
    const env =
      run.config.task.name === "env" ? (run.config.task.options as { source?: unknown }).source : undefined;
    const long =
      typeof env === "string" && env.length > ENV_SOURCE_LINK_MAX
        ? ` (its environment is ${env.length.toLocaleString()} characters, past the ${ENV_SOURCE_LINK_MAX.toLocaleString()} a link is meant to carry: some apps cut long links; the run's bundle, Runs → Download, carries it whole)`
        : "";
    try {
      await navigator.clipboard.writeText(url);
      setCopied(`Link copied${long}`);
    } catch {
      setCopied(url);
    }
  }
  return (
    <span className="share-link">
      <button
        type="button"
        data-testid="share-link"
        disabled={!run}
        title={run ? "Copy a link that replays this run" : "Start a run to share it"}
        onClick={() => void copy()}
      >
        Copy share link
      </button>
      {copied && (
        <span className="share-copied" data-testid="share-copied" role="status">
          {copied}
        </span>
      )}
    </span>
  );
}
