// Search that explains itself (src/shared/search.js, issue 21): keys with aliases, scopes matched at
// any module boundary, a term that finds nothing says why, Enter opens an exact name first.
import assert from "node:assert/strict";
import { test } from "node:test";
import { SEARCH_KEYS, enterTarget, explainQuery, matchTerm, parseQuery, resolveKey, scopeMatches,
         searchText } from "../src/shared/search.js";

// a trace table (node / port / sample, hazards) and a verify table (name, scope, kind)
const col = key => ({ key, label: key, type: "text" });
const trace = { columns: ["node", "port", "sample", "status", "max", "hazards"].map(col),
                status_labels: {}, search_keys: ["node", "port", "status", "hazards"] };
const verify = { columns: ["name", "status", "kind", "scope", "nrmse"].map(col),
                 status_labels: { fail: "diverged", pass: "ok", uncompared: "not judged" }, search_keys: ["name", "scope", "kind"] };
const trow = (node, hazards, status) => ({ id: node + "/y/0", status, tap_status: null, reason: null, sub: null,
                                           cells: { node, port: "y", sample: 0, status, hazards } });
const vrow = (name, scope, status) => ({ id: name, status, tap_status: "compared", reason: status === "fail" ? "nrmse" : null,
                                         sub: null, cells: { name, status, kind: "tap", scope } });
const traceRows = [trow("scale", "frozen-constant, trace-loss", "fail"), trow("head", "", "pass"), trow("getitem_33", "", "pass"),
                   trow("getitem_3", "trace-loss", "pass")];
const verifyRows = [vrow("conv", "m.conv1", "pass"), vrow("l1a", "m.layer.1", "fail"), vrow("l1b", "m.layer.1.conv", "pass"),
                    vrow("l10", "m.layer.10", "pass"), vrow("l10b", "m.layer.10.bn", "pass"), vrow("out", null, "pass")];
const hayOf = (rows, table) => new Map(rows.map(r => [r.id, searchText(r, table)]));
const find = (rows, table, q) => {
  const hay = hayOf(rows, table);
  return rows.filter(r => parseQuery(q).every(t => matchTerm(r, hay.get(r.id), t, table))).map(r => r.id);
};

test("keys have aliases: hazard: is hazards:, verdict: is status:, id: is name:, module: is scope:", () => {
  assert.deepEqual(find(traceRows, trace, "hazard:trace-loss"), ["scale/y/0", "getitem_3/y/0"]);
  assert.deepEqual(find(traceRows, trace, "hazard:trace-loss"), find(traceRows, trace, "hazards:trace-loss"));
  assert.deepEqual(find(verifyRows, verify, "verdict:diverged"), ["l1a"]);
  assert.deepEqual(find(verifyRows, verify, "module:layer.1"), ["l1a", "l1b"]);
  assert.deepEqual(find(traceRows, trace, "nodes:head"), ["head/y/0"]);
  assert.equal(resolveKey("Hazard", trace), "hazards");
  assert.equal(resolveKey("hazard", verify), null);            // no hazards column in a verify table
  assert.equal(resolveKey("sample", trace), "sample");         // any column is a key
  // every alias names its key; no alias is claimed twice
  const all = SEARCH_KEYS.flatMap(k => [k.key, ...k.aliases]);
  assert.equal(new Set(all).size, all.length);
});

test("scope: matches at any module boundary, never inside a module's name", () => {
  assert.deepEqual(find(verifyRows, verify, "scope:layer.1"), ["l1a", "l1b"]);        // not m.layer.10
  assert.deepEqual(find(verifyRows, verify, "scope:m.layer.1"), ["l1a", "l1b"]);
  assert.deepEqual(find(verifyRows, verify, "scope:layer.10"), ["l10", "l10b"]);
  assert.deepEqual(find(verifyRows, verify, "scope:layer"), ["l1a", "l1b", "l10", "l10b"]);
  assert.deepEqual(find(verifyRows, verify, "scope:conv"), ["l1b"]);                  // a module at the end
  assert.deepEqual(find(verifyRows, verify, "scope:ayer.1"), []);
  assert.equal(scopeMatches("/blocks.3/attn", "blocks.3"), true);                      // "/" separates too
  assert.equal(scopeMatches("m.layer.1", "layer.1."), true);
});

test("an unknown key says so, and a name with a colon is still found", () => {
  const hay = hayOf(traceRows, trace);
  assert.deepEqual(find(traceRows, trace, "colour:red"), []);
  const why = explainQuery(traceRows, "colour:red", trace, hay, 0, null);
  assert.match(why, /unknown key “colour:”/);
  assert.match(why, /hazards/);                                  // the keys there are
  const named = [{ ...trow("a", "", "pass"), id: "g2:a/y/0" }];
  assert.deepEqual(find(named, trace, "g2:a"), ["g2:a/y/0"]);    // not a key: looked for as text
});

test("a value no row has says so, with the values there are", () => {
  const hay = hayOf(traceRows, trace);
  const why = explainQuery(traceRows, "hazard:frozen-literal", trace, hay, 0, null);
  assert.equal(why, "no row has hazards “frozen-literal” (there are: frozen-constant, trace-loss)");
  const vh = hayOf(verifyRows, verify);
  assert.equal(explainQuery(verifyRows, "status:broken", verify, vh, 0, null), "no row has status “broken” (there are: ok, diverged)");
  assert.equal(explainQuery(verifyRows, "zzz", verify, vh, 0, null), "no row contains “zzz”");
  // each term finds rows, but not together; or the filter hides them
  assert.equal(explainQuery(verifyRows, "l10 status:diverged", verify, vh, 0, null), "no row matches all of: l10, status:diverged");
  assert.equal(explainQuery(verifyRows, "l10", verify, vh, 0, "divergent only"), "no row matches “l10” (divergent only)");
  assert.equal(explainQuery(verifyRows, "l10", verify, vh, 2, null), "");                // rows shown: nothing to say
});

test("Enter opens the row named exactly so before one whose name only starts so", () => {
  const shown = rowsFor => rowsFor;
  const t = enterTarget(shown(find(traceRows, trace, "getitem_3").map(id => traceRows.find(r => r.id === id))), "getitem_3", null);
  assert.equal(t.id, "getitem_3/y/0");                          // getitem_33 comes first in model order
  const v = [vrow("getitem_33", "m", "pass"), vrow("getitem_3", "m", "pass"), vrow("getitem_3x", "m", "pass")];
  assert.equal(enterTarget(v, "getitem_3", "name").id, "getitem_3");
  assert.equal(enterTarget(v, "GETITEM_3 scope:m", "name").id, "getitem_3");
  assert.equal(enterTarget(v.slice(0, 1).concat(v.slice(2)), "getitem_3x", "name").id, "getitem_3x");
  assert.equal(enterTarget([v[0], v[2]], "getitem", "name").id, "getitem_33");         // prefixes: the first shown
  assert.equal(enterTarget([], "x", "name"), null);
});
