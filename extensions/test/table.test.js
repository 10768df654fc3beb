// The table's pure parts (src/shared/table.js): the virtual window, sorting, filtering, grouping,
// column widths and the CSV.
import assert from "node:assert/strict";
import { test } from "node:test";
import { searchText } from "../src/shared/search.js";
import { OVERSCAN, ROW_H, columnWidth, compareRows, displayColumns, nextSort, scrollTargetFor, tableCsv, tableItems,
         windowRange } from "../src/shared/table.js";

test("the window: the rows in view and OVERSCAN more each side, clamped to the list", () => {
  const viewH = 480, headH = ROW_H;          // 19 rows in view
  assert.deepEqual(windowRange(0, viewH, headH, 10000), { top: 0, first: 0, last: 19 + OVERSCAN });
  const at = 5000 * ROW_H;
  assert.deepEqual(windowRange(at, viewH, headH, 10000), { top: at, first: 5000 - OVERSCAN, last: 5000 + 19 + OVERSCAN });
  // a scrollTop past the end of a list that just got shorter: the last page
  const w = windowRange(at, viewH, headH, 100);
  assert.equal(w.top, 100 * ROW_H - (viewH - headH));
  assert.deepEqual([w.first, w.last], [100 - 19 - OVERSCAN, 100]);
  assert.deepEqual(windowRange(0, viewH, headH, 5), { top: 0, first: 0, last: 5 });
  assert.deepEqual(windowRange(0, viewH, headH, 0), { top: 0, first: 0, last: 0 });
});

test("scrolling to a row: centred when out of view, nothing when in view", () => {
  assert.equal(scrollTargetFor(3, 0, 480, ROW_H), null);
  assert.equal(scrollTargetFor(1000, 0, 480, ROW_H), 1000 * ROW_H - (480 - ROW_H) / 2 + ROW_H / 2);
  assert.equal(scrollTargetFor(0, 500, 480, ROW_H), 0);
  assert.equal(scrollTargetFor(1000, 0, 0, ROW_H), null);       // not laid out yet
});

const columns = [
  { key: "name", label: "name", type: "text", pinned: true }, { key: "status", label: "verdict", type: "status" },
  { key: "scope", label: "scope", type: "text" }, { key: "nrmse", label: "nrmse", type: "num" },
  { key: "n", label: "elements", type: "int", hidden: true },
];
const table = { status_labels: { fail: "diverged", pass: "ok", uncompared: "not compared" } };
const mk = (id, status, scope, nrmse, n) => ({ id, status, tap_status: "compared", cells: { name: id, scope, nrmse, n } });
const rows = [mk("a", "pass", "m.0", 0.001, 10), mk("b", "fail", "m.0", 0.5, 2000), mk("c", "uncompared", "m.1", null, 7),
              mk("d", "fail", "m.1", 0.02, 3), mk("e", "pass", "m.1", 0.001, 10)];
const hay = new Map(rows.map(r => [r.id, searchText(r, table)]));
const base = { query: "", onlyBad: false, sortKey: null, sortDir: 1, groupBy: false, collapsed: new Set() };
const ids = s => tableItems(rows, columns, table, { ...base, ...s }, hay, "scope").shownRows.map(r => r.id);

test("sorting: stable, missing values last both ways, status by verdict", () => {
  assert.deepEqual(ids({ sortKey: "nrmse", sortDir: -1 }), ["b", "d", "a", "e", "c"]);
  assert.deepEqual(ids({ sortKey: "nrmse", sortDir: 1 }), ["a", "e", "d", "b", "c"]);
  assert.deepEqual(ids({ sortKey: "status", sortDir: 1 }), ["b", "d", "c", "a", "e"]);
  assert.equal(compareRows(rows[2], rows[2], "nrmse", 1, columns), 0);
  assert.deepEqual(nextSort({ sortKey: null, sortDir: 1 }, columns[3]), { sortKey: "nrmse", sortDir: -1 });
  assert.deepEqual(nextSort({ sortKey: "nrmse", sortDir: -1 }, columns[3]), { sortKey: "nrmse", sortDir: 1 });
  assert.deepEqual(nextSort({ sortKey: null, sortDir: 1 }, columns[4]), { sortKey: "n", sortDir: 1 });
});

test("filters: divergent only, a filter key, the search", () => {
  assert.deepEqual(ids({ onlyBad: true }), ["b", "d"]);
  assert.deepEqual(tableItems(rows.map((r, i) => ({ ...r, flip: i === 4 ? "to-fail" : null })), columns,
                              { ...table, filter_key: "flip" }, { ...base, onlyBad: true }, hay, null).shownRows.map(r => r.id), ["e"]);
  assert.deepEqual(ids({ query: "scope:m.1 status:ok" }), ["e"]);
});

test("grouping: one header per scope, folded groups keep their rows in shownRows only", () => {
  const res = tableItems(rows, columns, table, { ...base, groupBy: true, collapsed: new Set(["m.0"]) }, hay, "scope");
  assert.deepEqual(res.items.map(it => it.r ? it.r.id : "#" + it.group + ":" + it.n + "/" + it.nfail + (it.collapsed ? "-" : "+")),
                   ["#m.0:2/1-", "#m.1:3/1+", "c", "d", "e"]);
  assert.deepEqual(res.shownRows.map(r => r.id), ["a", "b", "c", "d", "e"]);
  assert.deepEqual([...res.indexOf], [["c", 2], ["d", 3], ["e", 4]]);
});

test("shown columns: pinned first, hidden left out", () => {
  const cols = displayColumns([columns[1], columns[0], columns[4]], new Set(["n"]));
  assert.deepEqual(cols.map(c => c.key), ["name", "status"]);
});

test("column widths in ch from the content, capped per type", () => {
  assert.equal(columnWidth(columns[3], rows, table, "name"), 11);            // a measure: at least 10
  assert.equal(columnWidth(columns[4], rows, table, "name"), 11);            // "elements" + 2, +1
  assert.equal(columnWidth(columns[1], rows, table, "name"), "not compared".length + 1);
  const long = [mk("x".repeat(80), "pass", "s", 1, 1)];
  assert.equal(columnWidth(columns[0], long, table, "name"), 41);            // text cap 40
});

test("CSV: column keys, full precision, quoted when needed, verdict and reason last", () => {
  const r = { ...mk('a,"b"', "fail", null, 0.123456789, 3), reason: "nrmse" };
  assert.equal(tableCsv(columns.slice(0, 4), [r]),
               'name,status,scope,nrmse,verdict,reason\n"a,""b""",,,0.123456789,fail,nrmse\n');
  assert.equal(tableCsv([{ key: "shape" }], [{ cells: { shape: [2, 3] }, status: "pass", reason: null }]), 'shape,verdict,reason\n"[2, 3]",pass,\n');
});

test("CSV: a shown reason column is not repeated at the end (one header per column)", () => {
  const r = { cells: { name: "conv2d", nrmse: 0.0147, reason: "nrmse" }, status: "fail", reason: "nrmse" };
  const csv = tableCsv([{ key: "name" }, { key: "nrmse" }, { key: "reason" }], [r]);
  assert.equal(csv, "name,nrmse,reason,verdict\nconv2d,0.0147,nrmse,fail\n");
  const head = csv.split("\n")[0].split(",");
  assert.equal(new Set(head).size, head.length);
});

test("a compare verdict column is as wide as its pill, exact status and first mark", async () => {
  const { columnWidth } = await import("../src/shared/table.js");
  const c = { key: "B.status", label: "status", type: "verdict", group: "B" };
  const rows = [{ cells: { "B.status": "fail" }, sides: { B: { tap_status: "compared", first_divergent: true } } }];
  const w = columnWidth(c, rows, { status_labels: { fail: "diverged" } }, "name");
  assert.ok(w >= "diverged".length + 8 + 1, String(w));
});
