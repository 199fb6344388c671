// SPDX-License-Identifier: MIT
// zarrita.js's side of bench_io_remote: the slices of peer_remote.py (NSLICES
// disjoint chunk-sized slices of b3.zarr) read over HTTP with @zarrita/storage's
// FetchStore, all slices at once (Promise.all of zarr.get), one warm-up, then
// the best of REPS; checked against the slices read one by one.  Prints
// `zarrita: X s` and, from the proxy's log (CONTROL, emptied after the
// warm-up), its requests and body bytes per read.
//
//   node tests/bench/io/peer_zarrita_remote.mjs URL CONTROL REPS NSLICES
//   (zarrita from tests/tools/node_modules: npm ci --prefix tests/tools)
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

// The packages live in tests/tools/node_modules, not beside this file.
const modules = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../tools/node_modules");
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const zarr = await load("zarrita/dist/src/index.js");
const FetchStore = (await load("@zarrita/storage/dist/src/fetch.js")).default;

const [url, control] = [process.argv[2], process.argv[3].replace(/\/$/, "")];
const [reps, nslices] = [Number(process.argv[4]), Number(process.argv[5])];
const CH = 1_000_000;
const starts = [];
for (let k = 0; k < nslices; k++) starts.push((nslices <= 8 ? 2 * k : Math.floor((k * 100) / nslices)) * CH);

const arr = await zarr.open.v2(zarr.root(new FetchStore(url)), { kind: "array" });
const readAll = () => Promise.all(starts.map((a) => zarr.get(arr, [zarr.slice(a, a + CH)])));

const expect = [];
for (const a of starts) expect.push((await zarr.get(arr, [zarr.slice(a, a + CH)])).data);
const same = (got) => got.every((c, i) => Buffer.compare(Buffer.from(c.data.buffer), Buffer.from(expect[i].buffer)) === 0);

if (!same(await readAll())) throw new Error("zarrita: slices differ");
await fetch(`${control}/log`, { method: "DELETE" });
let best = Infinity;
for (let r = 0; r < reps; r++) {
  const t0 = process.hrtime.bigint();
  const got = await readAll();
  best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
  if (!same(got)) throw new Error("zarrita: slices differ");
}
const log = await (await fetch(`${control}/log`)).json();
console.log(`zarrita: ${best.toPrecision(6)} s`);
console.log(`zarrita_requests: ${log.length / reps} requests`);
console.log(`zarrita_bytes: ${log.reduce((n, e) => n + e.bytes, 0) / reps} bytes`);
