// The accuracy graph's colour scales (src/shared/colour.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { badColor, badness, mix } from "../src/shared/colour.js";

const above = { threshold: 0.01, worse: "above" }, below = { threshold: 0.999, worse: "below" }, none = { threshold: null };

test("badness: 0 at the rule's threshold, one per decade, worse is positive", () => {
  assert.equal(badness(0.01, above), 0);
  assert.ok(Math.abs(badness(0.1, above) - 1) < 1e-12);
  assert.ok(Math.abs(badness(0.001, above) + 1) < 1e-12);
  assert.equal(badness(0, above), -3);                       // exact: as good as it gets
  assert.ok(Math.abs(badness(0.99, below) - 1) < 1e-9);      // cosine: 10x the distance from 1
  assert.equal(badness(1, below), -3);
  assert.equal(badness(null, above), null);
  assert.equal(badness(NaN, above), null);
});

test("badness without a rule: the value's place in the shown range (log)", () => {
  assert.equal(badness(10, none, [0, 2]), 0.5);
  assert.equal(badness(10, none, [1, 1]), 1);
  assert.equal(badness(0, none, [0, 2]), 0);
  assert.equal(badness(5, none, null), 0);
});

test("mix: hex colours, t clamped", () => {
  assert.equal(mix("#000000", "#ffffff", 0.5), "#808080");
  assert.equal(mix("#102030", "#ffffff", -1), "#102030");
  assert.equal(mix("#102030", "#ffffff", 7), "#ffffff");
});

test("badColor: green-yellow under the rule, orange-red over it, violet without one", () => {
  assert.equal(badColor(null, above), "#f5f5f5");
  assert.equal(badColor(-2, above), "#c8e6c9");
  assert.equal(badColor(0, above), "#ffb74d");
  assert.equal(badColor(2, above), "#e57373");
  assert.equal(badColor(-0.001, above), mix("#fff59d", "#c8e6c9", 0.0005));
  assert.equal(badColor(0, none), "#e8eaf6");
  assert.equal(badColor(1, none), "#7e57c2");
});
