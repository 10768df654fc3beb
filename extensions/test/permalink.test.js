// The offline report's link (src/shared/permalink.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { fragmentOf, parseFragment } from "../src/shared/permalink.js";

test("a fragment names the view, tab, row, sample and query, and reads back", () => {
  const state = { tab: "table", row: "blocks.3/out & x", sample: 1, query: "scope:blocks.3 status:diverged" };
  const f = fragmentOf("verify", state);
  assert.equal(f, "view=verify&tab=table&row=blocks.3%2Fout+%26+x&sample=1&q=scope%3Ablocks.3+status%3Adiverged");
  assert.deepEqual(parseFragment("#" + f, "verify"), { tab: "table", row: "blocks.3/out & x", sample: "1", q: state.query });
});

test("no row, no sample, no query: left out; another kind's link is not this view's", () => {
  assert.equal(fragmentOf("trace", { tab: "log", row: null, sample: null, query: "" }), "view=trace&tab=log");
  assert.equal(parseFragment("#view=trace&tab=log", "verify"), null);
  assert.equal(parseFragment("", "verify"), null);
  assert.deepEqual(parseFragment("#row=a", "verify"), { tab: null, row: "a", sample: null, q: null });
});
