// SPDX-License-Identifier: MIT
// An independent reader for the launcher tests: open each Zarr node (v2 or v3,
// array or group) named on the command line with zarrita and print one JSON
// line per path: kind, zarr_format, and for an array shape, dtype, chunks
// (the stored grid: shards when sharded), the sum of all elements and the
// SHA-256 of the decoded contents in C order, little-endian (what
// `sluice checksum` prints for the same contents).  A node that cannot be
// opened or read prints {"path", "ok": false, "error"}; the exit status is
// 0 either way, so one process can check many paths.
//
//   node tests/tools/zarr_read.mjs PATH...    (after npm ci --prefix tests/tools)
import { createHash } from "node:crypto";
import * as path from "node:path";
import FileSystemStore from "@zarrita/storage/fs";
import * as zarr from "zarrita";

function sumOf(data) {
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) {
    let s = 0n;
    for (const v of data) s += v;
    return s.toString();
  }
  if (!ArrayBuffer.isView(data)) return null; // strings, bools as objects
  let s = 0;
  for (let i = 0; i < data.length; i++) s += Number(data[i]);
  return s;
}

function bytesOf(data) {
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (data && ArrayBuffer.isView(data._data)) return bytesOf(data._data); // BoolArray and kin
  return new TextEncoder().encode(JSON.stringify(Array.from(data)));
}

async function openAs(loc, open) {
  try {
    return await open(loc);
  } catch (e) {
    return e;
  }
}

// Open with each format; a node readable as both (metadata of both formats in
// one directory) says so in "formats" and is described as v3.
async function describe(p) {
  const loc = zarr.root(new FileSystemStore(path.resolve(p)));
  const v3 = await openAs(loc, zarr.open.v3);
  const v2 = await openAs(loc, zarr.open.v2);
  const formats = [];
  if (!(v2 instanceof Error)) formats.push(2);
  if (!(v3 instanceof Error)) formats.push(3);
  if (formats.length === 0) throw v3;
  const node = v3 instanceof Error ? v2 : v3;
  const out = { path: p, ok: true, kind: node.kind, zarr_format: formats[formats.length - 1] };
  if (formats.length > 1) out.formats = formats;
  if (node.kind === "group") {
    out.attributes = Object.keys(node.attrs ?? {}).sort();
    return out;
  }
  const chunk = await zarr.get(node);
  out.shape = node.shape;
  out.dtype = node.dtype;
  out.chunks = node.chunks;
  out.sum = sumOf(chunk.data);
  out.sha256 = createHash("sha256").update(bytesOf(chunk.data)).digest("hex");
  return out;
}

for (const p of process.argv.slice(2)) {
  let line;
  try {
    line = await describe(p);
  } catch (e) {
    line = { path: p, ok: false, error: `${e?.name ?? "Error"}: ${e?.message ?? e}` };
  }
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
