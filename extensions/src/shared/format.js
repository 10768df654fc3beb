// The one number format of every view (Python: leapp_lab/model/numfmt.py, same rules). The spec both
// implement: tests/data/numfmt_cases.json, read by test/format.test.js and tests/unit/test_numfmt.py.
// kind: num | int | cos | x | text | bool | shape | status.
const INT_LIMIT = 1e15;

export function fmtNum(v) {
  if (Number.isNaN(v)) return "nan";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  if (v === 0) return "0";
  if (Number.isInteger(v) && Math.abs(v) < INT_LIMIT) return String(v);
  // 4 significant digits, half away from zero on the exact value (toExponential's rounding)
  const [mant, exp] = Math.abs(v).toExponential(3).split("e");
  const digits = mant.replace(".", ""), e = Number(exp), sign = v < 0 ? "-" : "";
  if (e >= -3 && e <= 3) {
    const whole = e >= 0 ? digits.slice(0, e + 1) : "0";
    const frac = (e >= 0 ? digits.slice(e + 1) : "0".repeat(-e - 1) + digits).replace(/0+$/, "");
    return sign + whole + (frac ? "." + frac : "");
  }
  return sign + digits[0] + "." + digits.slice(1) + "e" + (e >= 0 ? "+" : "-") + String(Math.abs(e)).padStart(2, "0");
}

export function fmt(v, kind) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (Array.isArray(v)) return "[" + v.map(x => fmt(x, kind === "shape" ? "num" : kind)).join(", ") + "]";
  if (typeof v === "number") {
    if (kind === "cos" && Math.abs(v) < 2) {
      const s = Math.abs(v).toFixed(6);
      return (v < 0 && Number(s) !== 0 ? "-" : "") + s;
    }
    return fmtNum(v) + (kind === "x" ? "x" : "");
  }
  return String(v);
}

// a histogram's bin edge: `digits` decimals and the exponent as toExponential writes it ("1.0e-3";
// Python: numfmt.fmt_exp, the figures' tick labels)
export function fmtExp(v, digits = 1) {
  if (v === null || v === undefined) return "–";
  if (!Number.isFinite(v)) return fmtNum(v);
  return (v < 0 ? "-" : "") + Math.abs(v).toExponential(digits);
}

// a shape as the tables print it ("–" when unknown, the missing value of every format)
export function shapeText(s) { return fmt(s === undefined ? null : s, "shape"); }

// plotly draws names and hover text as its own small HTML: user strings go in as entities
export function plotText(s) {
  return String(s).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
