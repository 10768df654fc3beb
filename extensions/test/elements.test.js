// The per-element bars (shared/elements.js): one bar per element in order, the worst one red,
// an element without a number drawn at 0 (pure; no DOM).
import { test } from "node:test";
import assert from "node:assert/strict";
import { elementTraces } from "../src/shared/elements.js";

test("element bars: names in order, worst in red, missing values at zero, names escaped for plotly", () => {
  const [t] = elementTraces({ names: ["hip", "knee", "<a>"], max_abs: [0.1, 0.5, null], nrmse: [0.01, null, null], worst: "knee" });
  assert.deepEqual(t.x, ["hip", "knee", "&lt;a&gt;"]);
  assert.deepEqual(t.y, [0.1, 0.5, 0]);
  assert.deepEqual(t.marker.color, ["#ef6c00", "#c62828", "#ef6c00"]);
  assert.equal(t.text[0], "nrmse 0.01");
  assert.equal(t.text[1], "nrmse –");
});
