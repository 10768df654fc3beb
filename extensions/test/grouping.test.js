// "group by scope" at a depth that makes groups of several rows (src/shared/table.js, issue 21): on a
// model whose every tap has a scope of its own, grouping by the whole scope is one group per row.
import assert from "node:assert/strict";
import { test } from "node:test";
import { searchText } from "../src/shared/search.js";
import { autoDepth, groupLevels, groupOf, tableItems } from "../src/shared/table.js";

const columns = [{ key: "name", label: "name", type: "text" }, { key: "scope", label: "scope", type: "text" }];
const table = { status_labels: {} };
const mk = (id, scope, status) => ({ id, status: status || "pass", tap_status: "compared", cells: { name: id, scope } });
// a ResNet-like model: a stem, two stages of two blocks of three taps, a head; every tap its own scope
const rows = [mk("conv1", "m.conv1"), mk("bn1", "m.bn1")];
for (const s of [1, 2]) for (const b of [0, 1]) for (const t of ["conv1", "bn1", "relu"]) rows.push(mk(`l${s}.${b}.${t}`, `m.layer${s}.${b}.${t}`, t === "relu" && s === 2 ? "fail" : "pass"));
rows.push(mk("fc", "m.fc"), mk("out", null));
const hay = new Map(rows.map(r => [r.id, searchText(r, table)]));
const base = { query: "", onlyBad: false, sortKey: null, sortDir: 1, groupBy: true, collapsed: new Set() };
const groups = depth => tableItems(rows, columns, table, { ...base, groupDepth: depth }, hay, "scope").items.filter(it => !it.r);

test("a scope's group at a depth: its first modules", () => {
  assert.equal(groupOf("m.layer1.0.conv1", "scope", 1), "m");
  assert.equal(groupOf("m.layer1.0.conv1", "scope", 3), "m.layer1.0");
  assert.equal(groupOf("m.fc", "scope", 3), "m.fc");
  assert.equal(groupOf(null, "scope", 2), "");
  assert.equal(groupOf("a.b", "node", 1), "a.b");               // only scopes have depths
});

test("the whole scope is one group per row; the chosen depth makes groups of several rows", () => {
  const whole = groups(null);
  assert.equal(whole.length, rows.length);                       // today's "· 1 rows ·" for every row
  assert.ok(whole.every(g => g.n === 1));
  const levels = groupLevels(rows, "scope");
  assert.deepEqual(levels.map(l => [l.depth, l.groups]), [[1, 2], [2, 6], [3, 8], [4, 16]]);
  const d = autoDepth(levels, rows.length);
  assert.equal(d, 3);                                            // m.layer1.0, m.layer1.1, ... (3 taps each)
  const g = groups(d);
  assert.deepEqual(g.map(x => x.group + ":" + x.n + "/" + x.nfail),
                   ["m.conv1:1/0", "m.bn1:1/0", "m.layer1.0:3/0", "m.layer1.1:3/0", "m.layer2.0:3/1", "m.layer2.1:3/1", "m.fc:1/0", ":1/0"]);
  assert.ok(g.filter(x => x.n > 1).reduce((a, x) => a + x.n, 0) * 3 >= rows.length * 2);   // most rows share a group
});

test("the user picks another depth; a flat model groups at depth 1", () => {
  assert.deepEqual(groups(2).map(x => x.group), ["m.conv1", "m.bn1", "m.layer1", "m.layer2", "m.fc", ""]);
  const flat = ["net.0", "net.1", "net.2", "net.3"].map((s, i) => mk("t" + i, s));
  assert.equal(autoDepth(groupLevels(flat, "scope"), flat.length), 1);   // one group "net", not four of one row
  assert.deepEqual(groupLevels([mk("a", "x")], "node"), [{ depth: 1, groups: 1, several: 0 }]);
});
