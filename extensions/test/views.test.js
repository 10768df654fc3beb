// Pure parts of the view modules: the profile's x axis (views/verify.js), the deep tables' columns
// (views/deep.js), which node's Layers a trace view shows (views/layers.js) and the tab registry (tabs.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { TABS } from "../src/tabs.js";
import { DEEP_SECTIONS, deepColumns } from "../src/views/deep.js";
import { layerNodes, pickLayer } from "../src/views/layers.js";
import { profileHover, profileMarks, profilePoints, profileTicks, scopeGroup } from "../src/views/verify.js";

test("profile ticks: every name up to 40 rows, else one per module with alternating bands", () => {
  const few = { x: ["a", "b"], scope: ["m", "m"] };
  assert.deepEqual(profileTicks(few), { tickvals: [0, 1], ticktext: ["a", "b"], bands: [] });
  const x = Array.from({ length: 60 }, (_, i) => "t" + i);
  const scope = x.map((_, i) => "blocks." + Math.floor(i / 20) + ".mlp");
  const t = profileTicks({ x, scope });
  assert.deepEqual(t.tickvals, [0, 20, 40]);
  assert.deepEqual(t.ticktext, ["blocks.0", "blocks.1", "blocks.2"]);
  assert.deepEqual(t.bands, [[19.5, 39.5]]);
  const flat = profileTicks({ x, scope: [] });           // no scopes: ~30 evenly spaced names
  assert.equal(flat.tickvals.length, 30);
  assert.equal(scopeGroup("blocks.3.attn.q"), "blocks.3");
  assert.equal(scopeGroup(null), "");
});

test("profile ticks and hover put tap names in as entities (plotly would drop a name's <b> as markup)", () => {
  const p = { x: ["block1 <b>", "up→ü"], scope: ["b<1>", null], reason: ["nrmse", null] };
  assert.deepEqual(profileTicks(p).ticktext, ["block1 &lt;b&gt;", "up→ü"]);
  assert.deepEqual(profileHover(p), ["block1 &lt;b&gt; · b&lt;1&gt;<br>why: nrmse", "up→ü"]);
  const many = { x: Array.from({ length: 60 }, (_, i) => "<i>" + i), scope: [] };
  assert.ok(profileTicks(many).ticktext.every(t => t.startsWith("&lt;i&gt;")));
});

test("deep tables: the columns the view dict carries (Python defines them), none without", () => {
  assert.deepEqual(DEEP_SECTIONS, ["replay", "parity", "adapters", "exporters", "isolation"]);
  assert.deepEqual(deepColumns({ columns: [{ key: "step", label: "step", type: "int" }] }), [["step", "step", "int"]]);
  assert.deepEqual(deepColumns({}), []);
  assert.deepEqual(deepColumns(null), []);
});

test("the registry: one renderer per tab id, the table among them, in a fixed order", () => {
  assert.deepEqual(Object.keys(TABS), [...DEEP_SECTIONS, "table", "node", "graph", "hazards", "log", "layers", "pipeline", "profile", "bars"]);
  for (const fn of Object.values(TABS)) assert.equal(typeof fn, "function");
});

test("layers: the asked node and engine when it has them, else the first node with Layers and its first drawn entry", () => {
  const v = { view: { kind: "verify" } };
  const view = { nodes: {
    encoder: { layers: [{ engine: "ort-int8", status: "ok", ...v }] },
    norm: { layers: [] },
    policy: { layers: [{ engine: "trt-fp16", status: "unavailable", view: null }, { engine: "ort-int8", status: "diverged", ...v },
                       { engine: "ort", status: "ok", ...v }] } } };
  assert.deepEqual(layerNodes(view), ["encoder", "policy"]);
  assert.equal(pickLayer(view, "policy", "ort").entry.engine, "ort");
  assert.equal(pickLayer(view, "policy", null).entry.engine, "ort-int8");      // the first one drawn
  assert.equal(pickLayer(view, "policy", "trt-fp16").entry.status, "unavailable");
  const other = pickLayer(view, "norm", "ort");                                // no engine build: the first node that has one
  assert.deepEqual([other.node, other.entry.engine, other.asked], ["encoder", "ort-int8", "norm"]);
  assert.equal(pickLayer({ nodes: { a: { layers: [] } } }, "a", null), null);
});

test("profile: an exact 0 on a log axis goes at the bottom as exact, never among the non-finite rows at the top", () => {
  // a multi-output model's argmax / bool taps: nrmse exactly 0 (tests: the mu.ort-int8 run)
  const s = { label: "NRMSE", log: true, threshold: 0.01, y: [0.0066, 0, 0, 0.0145, null] };
  const p = profilePoints(s, [0, 0, 0, 0, 12]);
  assert.deepEqual(p.zeros, [1, 2]);
  assert.deepEqual(p.missing, [4]);
  assert.ok(p.yZero < 0.0066 && p.yMissing > 0.0145);
  assert.equal(p.missingLabel, "× no NRMSE (non-finite)");
  assert.equal(p.zeroLabel, "○ NRMSE 0 (exact)");
  const q = profilePoints({ label: "growth", log: true, y: [null, 1.1, 0] }, [0, 0, 0]);
  assert.equal(q.missingLabel, "× no growth");            // nothing to divide by: not "non-finite"
  assert.deepEqual(profilePoints({ label: "cosine", log: false, y: [1, 0] }, []).zeros, []);   // linear: 0 is a value
});

test("profile marks: marks at one row share a label, near ones stack instead of printing over each other", () => {
  const same = profileMarks({ first_divergent_index: 7, first_local_divergent_index: 7 }, 2);
  assert.deepEqual(same.map(m => [m.i, m.dash, m.label, m.yshift]),           // both lines, one label
                   [[7, "dot", "first divergent · first locally divergent", 0], [7, "dashdot", "", 0]]);
  const near = profileMarks({ first_divergent_index: 3, first_local_divergent_index: 4, first_beyond_expected_index: 20,
                              beyond_label: "first beyond expected int8" }, 3);
  assert.deepEqual(near.map(m => [m.i, m.yshift]), [[3, 0], [4, 12], [20, 0]]);
  assert.deepEqual(profileMarks({ first_divergent_index: null }, 3), []);
});
