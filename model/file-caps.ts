// The most bytes the lab reads of each small file of a model folder (config, tokenizer, index,
// template), checked before the file is parsed and, where its size is known, before it is read,
// so a file of hundreds of megabytes is refused at once instead of filling memory. Real models
// sit far below them (Gemma 3's tokenizer.json, among the largest, is about 33 MB). Weights
// (safetensors) are read tensor by tensor and have no cap of this kind.
const MiB = 1 << 20;

export const FILE_CAPS: Readonly<Record<string, number>> = Object.freeze({
  "config.json": 1 * MiB,
  "generation_config.json": 1 * MiB,
  "model.safetensors.index.json": 16 * MiB,
  "tokenizer.json": 64 * MiB,
  "tokenizer_config.json": 64 * MiB,
  "special_tokens_map.json": 1 * MiB,
  "chat_template.jinja": 1 * MiB,
});

/** Throws naming the file when `size` bytes are more than its cap (files without one pass). */
export function checkFileSize(path: string, size: number): void {
  const base = path.slice(path.lastIndexOf("/") + 1);
  const cap = Object.hasOwn(FILE_CAPS, base) ? FILE_CAPS[base] : undefined;
  if (cap !== undefined && size > cap)
    throw new Error(`${path}: ${size} bytes; a ${base} may have at most ${cap / MiB} MiB`);
}
