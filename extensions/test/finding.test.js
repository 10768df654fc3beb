// The finding's text cut into plain text and row links (src/shared/finding.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { findingParts } from "../src/shared/finding.js";

test("every whole occurrence of a cited row becomes a link; the text reads back unchanged", () => {
  const text = "block2 adds 70× more error than any other layer; block20 and xblock2 do not; block2.";
  const parts = findingParts(text, [{ text: "block2", row: "block2" }]);
  assert.equal(parts.map(p => p.text).join(""), text);
  assert.deepEqual(parts.filter(p => p.row).map(p => p.text), ["block2", "block2"]);
});

test("the longest name wins where two start at one place; no link, one plain part", () => {
  const parts = findingParts("normalizer/features/1 fails", [{ text: "normalizer", row: "n" },
                                                             { text: "normalizer/features/1", row: "r" }]);
  assert.deepEqual(parts, [{ text: "normalizer/features/1", row: "r" }, { text: " fails", row: null }]);
  assert.deepEqual(findingParts("all pass", []), [{ text: "all pass", row: null }]);
});
