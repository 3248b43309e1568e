// A zip archive of an export's files for the page's "Export" download: the stored method
// (no compression; the parquet files are compressed already), UTF-8 names, a fixed
// 1980-01-01 timestamp so the same export gives the same bytes, and Unix modes (run.sh is
// executable). No library: the format is small and config/link.ts already has CRC-32.
// Tested by export/export.test.ts (read back with python3's zipfile).
import { crc32 } from "../config/link.ts";

const DOS_DATE = (0 << 9) | (1 << 5) | 1; // 1980-01-01
const UTF8_FLAG = 0x0800;

export function zipFiles(files: Record<string, Uint8Array>): Uint8Array {
  const enc = new TextEncoder();
  const local: Uint8Array[] = [];
  const central: Uint8Array[] = [];
  let offset = 0;
  const names = Object.keys(files).sort();
  for (const name of names) {
    const data = files[name];
    const n = enc.encode(name);
    const crc = crc32(data);
    const mode = name.endsWith(".sh") ? 0o100755 : 0o100644;
    const lh = new DataView(new ArrayBuffer(30));
    lh.setUint32(0, 0x04034b50, true);
    lh.setUint16(4, 20, true); // version needed
    lh.setUint16(6, UTF8_FLAG, true);
    lh.setUint16(8, 0, true); // stored
    lh.setUint16(10, 0, true); // time
    lh.setUint16(12, DOS_DATE, true);
    lh.setUint32(14, crc, true);
    lh.setUint32(18, data.length, true);
    lh.setUint32(22, data.length, true);
    lh.setUint16(26, n.length, true);
    lh.setUint16(28, 0, true);
    local.push(new Uint8Array(lh.buffer), n, data);
    const ch = new DataView(new ArrayBuffer(46));
    ch.setUint32(0, 0x02014b50, true);
    ch.setUint16(4, (3 << 8) | 20, true); // made by Unix, zip 2.0
    ch.setUint16(6, 20, true);
    ch.setUint16(8, UTF8_FLAG, true);
    ch.setUint16(10, 0, true);
    ch.setUint16(12, 0, true);
    ch.setUint16(14, DOS_DATE, true);
    ch.setUint32(16, crc, true);
    ch.setUint32(20, data.length, true);
    ch.setUint32(24, data.length, true);
    ch.setUint16(28, n.length, true);
    ch.setUint16(30, 0, true); // extra
    ch.setUint16(32, 0, true); // comment
    ch.setUint16(34, 0, true); // disk
    ch.setUint16(36, 0, true); // internal attributes
    ch.setUint32(38, (mode << 16) >>> 0, true);
    ch.setUint32(42, offset, true);
    central.push(new Uint8Array(ch.buffer), n);
    offset += 30 + n.length + data.length;
  }
  const cdSize = central.reduce((a, b) => a + b.length, 0);
  const end = new DataView(new ArrayBuffer(22));
  end.setUint32(0, 0x06054b50, true);
  end.setUint16(8, names.length, true);
  end.setUint16(10, names.length, true);
  end.setUint32(12, cdSize, true);
  end.setUint32(16, offset, true);
  const parts = [...local, ...central, new Uint8Array(end.buffer)];
  const out = new Uint8Array(parts.reduce((a, b) => a + b.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
