import { createRoot } from "react-dom/client";
import { App } from "./App";
import "./style.css";

// Runs live in IndexedDB: ask once that the browser not evict them under storage pressure
// (only the page can ask; the Runs tab shows usage and whether it was granted).
navigator.storage?.persist?.().catch(() => false);

createRoot(document.getElementById("root")!).render(<App />);
