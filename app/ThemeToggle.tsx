// Light / dark / follow the system (prefers-color-scheme); the choice is kept in localStorage.
import { useEffect } from "react";
import { useLab } from "./store";

const NEXT = { auto: "light", light: "dark", dark: "auto" } as const;

export function ThemeToggle() {
  const theme = useLab((s) => s.theme);
  useEffect(() => {
    const saved = localStorage.getItem("lab-theme");
    if (saved === "light" || saved === "dark") useLab.setState({ theme: saved });
  }, []);
  useEffect(() => {
    if (theme === "auto") {
      delete document.documentElement.dataset.theme;
      localStorage.removeItem("lab-theme");
    } else {
      document.documentElement.dataset.theme = theme;
      localStorage.setItem("lab-theme", theme);
    }
  }, [theme]);
  return (
    <button
      type="button"
      className="theme-toggle"
      data-testid="theme-toggle"
      title="Theme: follow the system, light or dark"
      onClick={() => useLab.setState({ theme: NEXT[theme] })}
    >
      {theme === "auto" ? "◐ auto" : theme === "light" ? "☀ light" : "☾ dark"}
    </button>
  );
}
