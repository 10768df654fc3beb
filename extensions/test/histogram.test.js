// The histogram's bins as plot bars (src/shared/histogram.js; the bins: leapp_lab/model/hist.py).
import assert from "node:assert/strict";
import { test } from "node:test";
import { binEdge, histTraces } from "../src/shared/histogram.js";

test("bin b starts at the float64 whose bit pattern is b << 50", () => {
  assert.equal(binEdge(0), 0);
  assert.equal(binEdge(1023 * 4), 1);        // exponent 1023, mantissa 0
  assert.equal(binEdge(1023 * 4 + 2), 1.5);  // the top two mantissa bits: quarter steps of a binade
  assert.equal(binEdge(1024 * 4), 2);
  assert.ok(binEdge(1023 * 4 - 1) < 1 && binEdge(1023 * 4 - 1) === 0.875);
});

test("zero bin at 0, log bins from x=2, non-finite bar at the end", () => {
  const t = histTraces({ zero: 5, counts: [1, 0, 3], first_bin: 1023 * 4, nonfinite: 2 }, "NaN or inf");
  const bar = t.data[0];
  assert.deepEqual(bar.x, [0, 2, 3, 4, 6]);
  assert.deepEqual(bar.y, [5, 1, 0, 3, 2]);
  assert.deepEqual(bar.marker.color, ["#1565c0", "#ef6c00", "#ef6c00", "#ef6c00", "#6a1b9a"]);
  assert.deepEqual(bar.text, ["exactly 0", "[1.00e+0, 1.25e+0)", "[1.25e+0, 1.50e+0)", "[1.50e+0, 1.75e+0)", "NaN or inf"]);
  assert.deepEqual(t.tickvals, [0, 1.5, 2.5, 3.5, 6]);
  assert.deepEqual(t.ticktext, ["0", "1.0e+0", "1.3e+0", "1.5e+0", "non-finite"]);
  assert.equal(t.annotations.length, 1);
  assert.equal(t.annotations[0].text, "non-finite 2");
});

test("at most ~8 ticks however many bins; no non-finite bar without non-finite pairs", () => {
  const t = histTraces({ zero: 0, counts: new Array(70).fill(1), first_bin: 4000 });
  assert.equal(t.data[0].x.length, 71);
  assert.ok(t.tickvals.length <= 9, String(t.tickvals.length));
  assert.deepEqual(t.annotations, []);
  assert.ok(!t.ticktext.includes("non-finite"));
});
