/** @module `npm run docs:security`: rewrites the authorization matrix of docs/security.md (scripts/security-matrix.ts). */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { withMatrix } from "./security-matrix.js";

const file = fileURLToPath(new URL("../docs/security.md", import.meta.url));
const before = readFileSync(file, "utf8");
const after = withMatrix(before);
if (after !== before) writeFileSync(file, after);
process.stdout.write(after === before ? "docs/security.md: the matrix is up to date\n" : "docs/security.md: matrix rewritten\n");
