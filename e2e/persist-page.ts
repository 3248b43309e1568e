// The test page of e2e/persist.e2e.test.ts: the persistence, bundle and link modules, bundled by
// vite into a page that exposes them as `window.lab` so the spec can drive the real IndexedDB,
// CompressionStream and storage quota of Chromium.
import { decodeLink, encodeLink } from "../config/link";
import { decodeBundle, encodeBundle } from "../rl/run/run-bundle";
import { openRunStore, requestPersistence, StorageFullError } from "../workers/store";

const lab = {
  openRunStore,
  requestPersistence,
  StorageFullError,
  encodeBundle,
  decodeBundle,
  encodeLink,
  decodeLink,
};
export type LabPage = typeof lab;

declare global {
  interface Window {
    lab: LabPage;
  }
}

window.lab = lab;
document.title = "persist test page ready";
