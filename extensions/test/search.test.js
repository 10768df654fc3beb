// Search terms (src/shared/search.js): parsing and matching against rows.
import assert from "node:assert/strict";
import { test } from "node:test";
import { matchTerm, parseQuery, searchText } from "../src/shared/search.js";

const table = { status_labels: { fail: "diverged", pass: "ok" }, search_keys: ["op"] };
const row = (id, status, cells, extra) => ({ id, status, cells, tap_status: "compared", reason: null, sub: null, ...extra });
const rows = [
  row("blocks.3/mlp/out", "fail", { scope: "blocks.3.mlp", op: "MatMul" }, { reason: "nrmse,non-finite" }),
  row("blocks.30/out", "pass", { scope: "blocks.30", op: "Add" }),
  row("head", "pass", { scope: null, op: "Gemm" }, { tap_status: "missing" }),
];
const find = q => rows.filter(r => parseQuery(q).every(t => matchTerm(r, searchText(r, table), t, table))).map(r => r.id);

test("terms: whitespace-separated, lower case, key:value", () => {
  assert.deepEqual(parseQuery("  Scope:Blocks.3   matmul "), [{ key: "scope", value: "blocks.3", text: "scope:blocks.3" },
                                                               { key: null, value: "matmul", text: "matmul" }]);
  assert.deepEqual(parseQuery(""), []);
  assert.deepEqual(parseQuery(null), []);
  assert.deepEqual(parseQuery(":x a:"), [{ key: null, value: ":x", text: ":x" }, { key: "a", value: "", text: "a:" }]);   // a leading colon is no key
});

test("a bare term looks in the name, verdict, its label, tap status, reason and search cells", () => {
  assert.deepEqual(find("matmul"), ["blocks.3/mlp/out"]);
  assert.deepEqual(find("diverged"), ["blocks.3/mlp/out"]);
  assert.deepEqual(find("missing"), ["head"]);
  assert.deepEqual(find("out pass"), ["blocks.30/out"]);       // every term must match
});

test("scope: is that module and the modules inside it, never a prefix of a name", () => {
  assert.deepEqual(find("scope:blocks.3"), ["blocks.3/mlp/out"]);
  assert.deepEqual(find("scope:blocks.3."), ["blocks.3/mlp/out"]);
  assert.deepEqual(find("scope:blocks.30"), ["blocks.30/out"]);
  assert.deepEqual(find("scope:blocks"), ["blocks.3/mlp/out", "blocks.30/out"]);   // the parent of both
  assert.deepEqual(find("scope:block"), []);
});

test("status:, reason:, name: and any other cell", () => {
  assert.deepEqual(find("status:diverged"), ["blocks.3/mlp/out"]);
  assert.deepEqual(find("status:ok"), ["blocks.30/out", "head"]);
  assert.deepEqual(find("reason:non-finite"), ["blocks.3/mlp/out"]);
  assert.deepEqual(find("name:head"), ["head"]);
  assert.deepEqual(find("op:gem"), ["head"]);
  assert.deepEqual(find("nosuch:x"), []);
});
