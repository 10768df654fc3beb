// The repair view's bar charts (src/views/repair.js): the reference lines' labels sit in the right
// margin, beside the plot, never over the last bar (issue 21).
import assert from "node:assert/strict";
import { test } from "node:test";
import { barsLayout } from "../src/views/repair.js";

const bars = { log: true, ylabel: "output nrmse", x: ["a", "b", "c"], y: [0.02, 0.3, 0.5],
               lines: [{ label: "target 0.18", y: 0.18, color: "#c62828", dash: "dash" }, { label: "as built", y: 0.31, color: "#616161" }] };

test("the target and as-built labels are outside the plot area, with room in the margin", () => {
  const L = barsLayout(bars, "t", bars.y);
  assert.equal(L.annotations.length, 2);
  for (const a of L.annotations) {
    assert.equal(a.xref, "paper");
    assert.ok(a.x >= 1 && a.xanchor === "left", JSON.stringify(a));      // right of the plot's right edge
    assert.ok(L.margin.r >= a.text.length * 6, `margin ${L.margin.r} for "${a.text}"`);
  }
  assert.deepEqual(L.annotations.map(a => a.text), ["target 0.18", "as built"]);
  assert.deepEqual(L.annotations.map(a => a.yanchor), ["top", "bottom"]);  // the upper label above its line
  assert.deepEqual(L.annotations.map(a => a.y), [Math.log10(0.18), Math.log10(0.31)]);
  assert.deepEqual(L.shapes.map(s => s.y0), [0.18, 0.31]);
  assert.deepEqual(L.yaxis.range, [Math.log10(0.02) - 0.4, Math.log10(0.5) + 0.2]);
});

test("no lines: no annotations and a plain margin", () => {
  const L = barsLayout({ log: false, lines: [] }, "t", [1, 2]);
  assert.deepEqual(L.annotations, []);
  assert.equal(L.margin.r, 10);
  assert.equal(L.yaxis.type, "linear");
});
