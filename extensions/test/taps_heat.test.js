// The steps × taps heatmap of an engine replay (views/replay_engine.js heatCells): one cell per step
// and tap in order, coloured against the rule, the first cell beyond it marked (pure; no DOM).
import { test } from "node:test";
import assert from "node:assert/strict";
import { heatCells } from "../src/views/replay_engine.js";

const T = { steps: [0, 1], taps: ["a", "b"], max_nrmse: 0.01, nrmse: [[0.001, 0.02], [null, 0.5]],
            local_nrmse: [[0.001, 0.002], [0.03, 0.004]], first: { step: 0, tap: "b" }, first_local: { step: 1, tap: "a" } };

test("taps heatmap: cells by step and tap, the first beyond the rule marked, local values apart", () => {
  const c = heatCells(T, false);
  assert.deepEqual(c.map(r => r.map(x => x.at)), [["0/a", "0/b"], ["1/a", "1/b"]]);
  assert.deepEqual(c.flat().filter(x => x.first).map(x => x.at), ["0/b"]);
  assert.equal(c[1][0].z, null);
  assert.equal(c[1][0].color, "#f5f5f5");                 // no number: grey
  assert.notEqual(c[0][0].color, c[0][1].color);          // below vs above the rule
  const l = heatCells(T, true);
  assert.deepEqual(l.flat().filter(x => x.first).map(x => x.at), ["1/a"]);
  assert.equal(l[1][0].z, 0.03);
});
