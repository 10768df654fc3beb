// Colour scales of the accuracy graph (views/engine_graph.js). Pure: no DOM
// (extensions/test/colour.test.js).

// badness of a metric value against the rule: 0 at the threshold, ±1 per decade (worse > 0);
// without a threshold, the value's place between the smallest and largest shown (0..1)
export function badness(v, m, range) {
  if (v === null || v === undefined || Number.isNaN(v)) return null;
  if (m.threshold !== null && m.threshold !== undefined) {
    const d = m.worse === "below" ? (1 - v) / (1 - m.threshold) : v / m.threshold;
    return d <= 0 ? -3 : Math.log10(d);
  }
  if (!range || !(v > 0)) return 0;
  return range[1] > range[0] ? (Math.log10(v) - range[0]) / (range[1] - range[0]) : 1;
}

// "#rrggbb" between a and b, t clamped to 0..1
export function mix(a, b, t) {
  const p = x => [1, 3, 5].map(i => parseInt(x.slice(i, i + 2), 16));
  const [x, y] = [p(a), p(b)];
  return "#" + x.map((c, i) => Math.round(c + (y[i] - c) * Math.max(0, Math.min(1, t))).toString(16).padStart(2, "0")).join("");
}

// with a rule: yellow -> green below the threshold, orange -> red above; without: a violet ramp
export function badColor(b, m) {
  if (b === null) return "#f5f5f5";
  if (m.threshold === null || m.threshold === undefined) return mix("#e8eaf6", "#7e57c2", b);
  return b < 0 ? mix("#fff59d", "#c8e6c9", -b / 2) : mix("#ffb74d", "#e57373", b / 2);
}

// the fill of a node's status in the plots (profile, bars, replay)
// (warn: diverged, but within what precision explains; the finding's amber)
export const statusColor = st => st === "fail" ? "#c62828" : st === "warn" ? "#ef8f00" : st === "pass" ? "#2e7d32" : "#9e9e9e";
