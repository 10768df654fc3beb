// The number format (src/shared/format.js). The same rule as leapp_lab/model/numfmt.py: both meet
// the spec tests/data/numfmt_cases.json (tests/unit/test_numfmt.py reads it too, and feeds a vector of
// random values through both).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fmt, fmtExp, fmtNum, plotText, shapeText } from "../src/shared/format.js";

const SPEC = JSON.parse(readFileSync(new URL("../../tests/data/numfmt_cases.json", import.meta.url), "utf8"));

test("the shared table: every case as tests/data/numfmt_cases.json writes it", () => {
  const value = v => (v !== null && typeof v === "object" && !Array.isArray(v) ? Number(v.float.replace("inf", "Infinity")) : v);
  assert.ok(SPEC.cases.length > 150);
  for (const c of SPEC.cases) {
    const v = value(c.value);
    const got = c.exp !== undefined ? fmtExp(v, c.exp) : fmt(v, c.kind);
    assert.equal(got, c.text, JSON.stringify(c));
  }
});

test("4 significant digits, fixed between 1e-3 and 1e4, else exponent", () => {
  const cases = [
    [12345.6, "num", "1.235e+04"], [0.0012345, "num", "0.001234"], [1234.5, "num", "1235"],
    [9999.96, "num", "1.000e+04"], [12.125, "num", "12.13"], [3.0, "num", "3"], [0.00099996, "num", "0.001"],
    [1e-7, "num", "1.000e-07"], [-2 / 3, "num", "-0.6667"], [1e21, "num", "1.000e+21"], [123456789, "num", "123456789"],
  ];
  for (const [v, k, want] of cases) assert.equal(fmt(v, k), want, `fmt(${v}, ${k})`);
});

test("missing, non-finite, booleans, shapes, cosines and ratios", () => {
  assert.equal(fmt(null, "num"), "–");
  assert.equal(fmt(undefined, "text"), "–");
  assert.equal(fmt(NaN, "num"), "nan");
  assert.equal(fmt(-Infinity, "num"), "-inf");
  assert.equal(fmt(Infinity, "x"), "infx");
  assert.equal(fmt(true, "bool"), "yes");
  assert.equal(fmt(false), "no");
  assert.equal(fmt([2, 3], "shape"), "[2, 3]");
  assert.equal(fmt([0.5, 12345.6], "num"), "[0.5, 1.235e+04]");
  assert.equal(fmt(0.9999995, "cos"), "1.000000");
  assert.equal(fmt(0.99949, "cos"), "0.999490");
  assert.equal(fmt(-0.0000004, "cos"), "0.000000");      // no "-0.000000"
  assert.equal(fmt(2.5, "x"), "2.5x");
  assert.equal(fmt("a <b>", "text"), "a <b>");
});

test("integers print whole below 1e15, zero without a sign", () => {
  assert.equal(fmtNum(10 ** 14), "100000000000000");
  assert.equal(fmtNum(10 ** 16), "1.000e+16");
  assert.equal(fmtNum(-0), "0");
  assert.equal(fmtNum(-42), "-42");
});

test("shapes and plot text", () => {
  assert.equal(shapeText(null), "–");          // the missing value of every format
  assert.equal(shapeText(undefined), "–");
  assert.equal(shapeText([1, 64]), "[1, 64]");
  assert.equal(plotText(`<b a="x">&'`), "&lt;b a=&quot;x&quot;&gt;&amp;&#39;");
});
