// Reads one .thf file with a peer's reader and exits 0 when it opens (a whole-process timing).
//
// usage: node reader.mjs ENTRY FILE
//   ENTRY exports readThreatModelText(text) from the peer's own source (see ../peer.py).
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [entry, file] = process.argv.slice(2);
const peer = await import(pathToFileURL(entry).href);
const model = peer.readThreatModelText(readFileSync(file, "utf8"));
process.stdout.write(`${file}: ok (${(model.elements ?? []).length} elements)\n`);
