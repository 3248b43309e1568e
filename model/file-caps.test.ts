// Size caps on a model folder's small files (model/file-caps.ts): a config.json or a tokenizer
// file past its cap is refused naming the file and the cap, before its bytes are read or parsed;
// a file under it passes. Run: npx vitest run --project unit model/file-caps.test.ts
import { describe, expect, it } from "vitest";
import { checkFileSize, FILE_CAPS } from "./file-caps";
import type { ModelDir } from "./hf/read";
import { loadHfTokenizerFiles } from "./hf/tokenizer";
import { checkModelFiles } from "./untrusted";

const MiB = 1 << 20;

/** A folder whose config.json claims `size` bytes and counts the bytes read from it. */
function hugeConfigDir(size: number): { dir: ModelDir; read: () => number } {
  let read = 0;
  const dir: ModelDir = {
    name: "bomb",
    async open(path) {
      if (path !== "config.json") return null;
      return {
        name: `bomb/${path}`,
        size,
        async read(_offset: number, length: number) {
          read += length;
          return new Uint8Array(length);
        },
      };
    },
  };
  return { dir, read: () => read };
}

describe("model file caps", () => {
  it("names the documented caps", () => {
    expect(FILE_CAPS["config.json"]).toBe(1 * MiB);
    expect(FILE_CAPS["tokenizer.json"]).toBe(64 * MiB);
    expect(() => checkFileSize("m/config.json", MiB)).not.toThrow();
    expect(() => checkFileSize("m/config.json", MiB + 1)).toThrow(
      "m/config.json: 1048577 bytes; a config.json may have at most 1 MiB",
    );
    expect(() => checkFileSize("m/model.safetensors", 10 * 1024 * MiB)).not.toThrow();
  });

  it("refuses a 300 MB config.json before reading a byte of it", async () => {
    const { dir, read } = hugeConfigDir(300 * MiB);
    await expect(checkModelFiles(dir)).rejects.toThrow(
      /config\.json: 314572800 bytes; a config\.json may have at most 1 MiB/,
    );
    expect(read()).toBe(0);
  });

  it("refuses an oversized tokenizer.json before parsing it", async () => {
    const big = new Uint8Array(64 * MiB + 1);
    await expect(
      loadHfTokenizerFiles("tok", async (p) =>
        p.endsWith("tokenizer.json") ? big : new TextEncoder().encode("{}"),
      ),
    ).rejects.toThrow("tok/tokenizer.json: 67108865 bytes; a tokenizer.json may have at most 64 MiB");
  });
});
