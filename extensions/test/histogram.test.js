// The histogram's bins as plot bars (src/shared/histogram.js; the bins: leapp_lab/model/hist.py).
import assert from "node:assert/strict";
import { test } from "node:test";
import { binEdge, histTicks, histTitle, histTraces } from "../src/shared/histogram.js";

test("bin b starts at the float64 whose bit pattern is b << 50", () => {
  assert.equal(binEdge(0), 0);
  assert.equal(binEdge(1023 * 4), 1);        // exponent 1023, mantissa 0
  assert.equal(binEdge(1023 * 4 + 2), 1.5);  // the top two mantissa bits: quarter steps of a binade
  assert.equal(binEdge(1024 * 4), 2);
  assert.ok(binEdge(1023 * 4 - 1) < 1 && binEdge(1023 * 4 - 1) === 0.875);
});

test("zero bin at 0, log bins from x=2, non-finite bar at the end", () => {
  const t = histTraces({ zero: 5, counts: [1, 0, 3], first_bin: 1023 * 4, nonfinite: 2 }, "NaN or inf", 700);
  const bar = t.data[0];
  assert.deepEqual(bar.x, [0, 2, 3, 4, 6]);
  assert.deepEqual(bar.y, [5, 1, 0, 3, 2]);
  assert.deepEqual(bar.marker.color, ["#1565c0", "#ef6c00", "#ef6c00", "#ef6c00", "#6a1b9a"]);
  assert.deepEqual(bar.text, ["exactly 0", "[1.00e+0, 1.25e+0)", "[1.25e+0, 1.50e+0)", "[1.50e+0, 1.75e+0)", "NaN or inf"]);
  assert.deepEqual(t.tickvals, [0, 1.5, 2.5, 3.5, 6]);
  assert.deepEqual(t.ticktext, ["0", "1.0e+0", "1.3e+0", "1.5e+0", "non-finite"]);
  assert.deepEqual(t.range, [-0.6, 6.6]);
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

// the tick labels of the x axis never overlap ("01.4e-6" was "0" and "1.4e-6" on top of each other)
const CHAR_PX = 7.2;
function collisions(t, plotPx) {
  const xs = t.data[0].x, range = t.range || [-0.5, xs[xs.length - 1] + 0.5];     // plotly's autorange for bars
  const perUnit = plotPx / (range[1] - range[0]);
  const out = [];
  for (let i = 1; i < t.tickvals.length; i++) {
    const room = (t.tickvals[i] - t.tickvals[i - 1]) * perUnit;
    const need = (t.ticktext[i].length + t.ticktext[i - 1].length) * CHAR_PX / 2 + 4;
    if (room < need) out.push(t.ticktext[i - 1] + "|" + t.ticktext[i] + " " + room.toFixed(0) + "px < " + need.toFixed(0));
  }
  return out;
}

test("tick labels do not collide, whatever the bins, the non-finite bar and the plot's width", () => {
  for (const plotPx of [180, 260, 350, 560, 900]) {
    for (let n = 1; n <= 80; n += 3) {
      for (const nonfinite of [0, 7]) {
        const counts = new Array(n).fill(2);
        const t = histTraces({ zero: 3, counts, first_bin: 4 * 1003, nonfinite }, "nf", plotPx);
        assert.deepEqual(collisions(t, plotPx), [], `n=${n} width=${plotPx} nonfinite=${nonfinite}`);
        assert.equal(t.tickvals[0], 0);
        if (nonfinite) assert.equal(t.ticktext[t.ticktext.length - 1], "non-finite");
        if (plotPx >= 260 && n >= 4) assert.ok(t.tickvals.length >= 3, `n=${n} width=${plotPx}: ${t.ticktext}`);   // still a scale
      }
    }
  }
  // a wide plot keeps a label per bin for few bins; each label is its bin's lower edge
  const t = histTicks(4, 4 * 1003, 0, 900);
  assert.deepEqual(t.tickvals, [0, 1.5, 2.5, 3.5, 4.5]);
  assert.equal(t.ticktext[1], binEdge(4 * 1003).toExponential(1));
});

test("a histogram's title puts user names in as entities (plotly reads <b> in a title as bold and drops it)", () => {
  assert.equal(histTitle("|engine − reference|", "block1 <b>", "all 3 samples"),
               "|engine − reference| · block1 &lt;b&gt; · all 3 samples");
  assert.equal(histTitle("|diff|", "a&b", null), "|diff| · a&amp;b · ");
});
