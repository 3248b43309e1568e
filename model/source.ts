// Where a pretrained model's files come from: the model source a RunConfig records, so that a
// share link names the weights it needs.
//   model.pretrained "<folder>"            a folder (the CLI's disk, the app's public folder)
//   model.pretrained "hf:<owner>/<name>"   the Hugging Face Hub, at model.revision
//   model.pretrained "local:<name>"        files a person picked in the page, named by model.sha256
// A pure module (no DOM, no network): model/hub.ts fetches and caches, workers/ and cli/ wire it.
// Tested by model/source.test.ts.
import type { RunConfig } from "../config";

export type ModelSource =
  | { kind: "folder"; path: string }
  | { kind: "hub"; repo: string; revision: string }
  | { kind: "local"; name: string; sha256: Record<string, string> };

const REPO_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** A Hub repo id ("owner/name"), or an error naming what is wrong with it. */
export function checkRepoId(repo: string): string {
  const r = repo.trim();
  if (!REPO_ID.test(r) || r.includes(".."))
    throw new Error(
      `model.pretrained: "${repo}" is not a Hugging Face repo id (owner/name, e.g. HuggingFaceTB/SmolLM2-135M-Instruct)`,
    );
  return r;
}

// A branch, tag or commit: segments like a repo id's parts, "/" between them (refs/pr/1).
const REVISION = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;

/**
 * A Hub revision, or an error naming model.revision: as strict as repo ids, since it becomes
 * part of the model cache's keys (a folder path in the CLI's cache).
 */
export function checkRevision(revision: string): string {
  if (!REVISION.test(revision) || revision.includes("..") || revision.length > 256)
    throw new Error(
      `model.revision: ${JSON.stringify(revision.slice(0, 300))} is not a Hub revision (a branch, tag or commit: letters, digits, ".", "_", "-", segments separated by "/", no "..")`,
    );
  return revision;
}

/** The source a model path names (model.pretrained or model.tokenizer), with the config's revision and hashes. */
export function parseModelSource(
  path: string,
  model: Pick<RunConfig["model"], "revision" | "sha256">,
): ModelSource {
  if (path.startsWith("hf:"))
    return { kind: "hub", repo: checkRepoId(path.slice(3)), revision: checkRevision(model.revision) };
  if (path.startsWith("local:")) {
    const name = path.slice(6);
    if (!name) throw new Error('model.pretrained: "local:" needs a name (local:<name>)');
    if (!model.sha256 || Object.keys(model.sha256).length === 0)
      throw new Error(
        `model.pretrained: ${path} names no files; model.sha256 must list each file's SHA-256 (the model picker sets it)`,
      );
    return { kind: "local", name, sha256: model.sha256 };
  }
  return { kind: "folder", path };
}

/** The run's model source, or null for the lab's own randomly initialised model. */
export function modelSourceOf(c: RunConfig): ModelSource | null {
  return c.model.pretrained === null ? null : parseModelSource(c.model.pretrained, c.model);
}

/** The model.pretrained / revision / sha256 fields that name a source (what the picker writes). */
export function sourceFields(s: ModelSource): Pick<RunConfig["model"], "pretrained" | "revision" | "sha256"> {
  if (s.kind === "hub") return { pretrained: `hf:${s.repo}`, revision: s.revision, sha256: null };
  if (s.kind === "local") return { pretrained: `local:${s.name}`, revision: "main", sha256: { ...s.sha256 } };
  return { pretrained: s.path, revision: "main", sha256: null };
}

/** A source in words, for messages: "hf:owner/name@rev", "local:name (3 files)", a folder. */
export function sourceLabel(s: ModelSource): string {
  if (s.kind === "hub") return `hf:${s.repo}@${s.revision}`;
  if (s.kind === "local") return `local:${s.name} (${Object.keys(s.sha256).length} files)`;
  return s.path;
}

/** The files of a model repo the lab reads; the rest (pytorch_model.bin, onnx, gguf, README) is never fetched. */
export function isModelFile(path: string): boolean {
  if (path.includes("/")) return false;
  return (
    path === "config.json" ||
    path === "generation_config.json" ||
    path === "tokenizer.json" ||
    path === "tokenizer_config.json" ||
    path === "special_tokens_map.json" ||
    path === "model.safetensors.index.json" ||
    path.endsWith(".safetensors")
  );
}
