// The |diff| histogram of one row and sample (leapp_lab/model/hist.py stores it): its bins as plot
// traces (pure: extensions/test/histogram.test.js) and its plot.
import { h } from "./dom.js";
import { fmtExp, plotText } from "./format.js";
import { clearPlot, hasPlotly, themed } from "./plot.js";

// Global log bins (leapp_lab/model/hist.py): bin b starts at the float64 whose bit pattern is b << 50.
const _f64 = new Float64Array(1), _u64 = new BigUint64Array(_f64.buffer);
export function binEdge(b) { _u64[0] = BigInt(b) << 50n; return _f64[0]; }

// A histogram's title: its parts joined by " · ", each a user string (a tap named "block1 <b>")
// put in as entities, since plotly reads <b>, <i>, <br> in a title as its own markup.
export function histTitle(...parts) {
  return parts.map(p => plotText(p === null || p === undefined ? "" : p)).join(" · ");
}

// plotly's tick labels: about this wide per character at its 12 px font, and this far apart at least
const CHAR_PX = 7.2, TICK_GAP_PX = 10;
export const HIST_MARGIN = { l: 50, r: 10, t: 34, b: 44 };
const labelPx = s => s.length * CHAR_PX;

// The x axis's ticks for n log bins in a plot area plotPx wide: "0" under the zero bin, a bin's lower
// edge every `step` bins, "non-finite" under its bar; `step` and the greedy pass keep neighbouring
// labels apart (no "01.4e-6"). range: the x range the plot shows (the ticks were placed for it).
export function histTicks(n, first, nonfinite, plotPx) {
  const xmax = nonfinite ? n + 3 : n + 1;
  const range = [-0.6, xmax + 0.6];
  const perUnit = plotPx / (range[1] - range[0]);
  const fits = (a, b) => (b.x - a.x) * perUnit >= (labelPx(a.text) + labelPx(b.text)) / 2 + TICK_GAP_PX;
  const zero = { x: 0, text: "0" };
  const nf = nonfinite ? { x: n + 3, text: "non-finite" } : null;
  const widest = labelPx(fmtExp(binEdge(first), 1)) + TICK_GAP_PX;
  const step = Math.max(1, Math.ceil(n / 7), Math.ceil(widest / perUnit));
  const kept = [zero];
  for (let i = 0; i < n; i += step) {
    const t = { x: i + 2 - 0.5, text: fmtExp(binEdge(first + i), 1) };
    if (fits(kept[kept.length - 1], t) && (!nf || fits(t, nf))) kept.push(t);
  }
  if (nf) kept.push(nf);
  return { tickvals: kept.map(t => t.x), ticktext: kept.map(t => t.text), range };
}

// plotPx: the width of the plot area (the div less the margins); 360 when it is not laid out yet
export function histTraces(hist, nonfiniteLabel, plotPx) {
  // zero bin at x=0, log bins from x=2 on (one empty slot between): the x axis *is* log(|diff|);
  // the non-finite pairs, left out of every bin, in a bar of their own at the right end
  const xs = [0], ys = [hist.zero], text = ["exactly 0"], colors = ["#1565c0"];
  const counts = hist.counts || [], n = counts.length, first = hist.first_bin || 0;
  for (let i = 0; i < n; i++) {
    xs.push(i + 2); ys.push(counts[i]); colors.push("#ef6c00");
    text.push("[" + fmtExp(binEdge(first + i), 2) + ", " + fmtExp(binEdge(first + i + 1), 2) + ")");
  }
  const ticks = histTicks(n, first, hist.nonfinite, plotPx > 0 ? plotPx : 360);
  if (hist.nonfinite) {
    xs.push(n + 3); ys.push(hist.nonfinite); colors.push("#6a1b9a"); text.push(nonfiniteLabel || "non-finite");
  }
  const annotations = hist.nonfinite ? [{ x: n + 3, y: hist.nonfinite, yanchor: "bottom", showarrow: false, text: "non-finite " + hist.nonfinite,
                                          font: { size: 10, color: "#6a1b9a" } }] : [];
  return { data: [{ type: "bar", x: xs, y: ys, text, hovertemplate: "%{text}<br>count %{y}<extra></extra>",
                    marker: { color: colors }, width: 0.92, textposition: "none" }],
           tickvals: ticks.tickvals, ticktext: ticks.ticktext, range: ticks.range, annotations };
}

export function drawHist(div, hist, title, nonfiniteLabel) {
  if (!hist || (hist.zero === 0 && !(hist.counts || []).length && !hist.nonfinite)) {
    clearPlot(div);
    div.append(h("div", { class: "leapp-empty" }, "no histogram stored for this row"));
    return;
  }
  const t = histTraces(hist, nonfiniteLabel, (div.clientWidth || 0) - HIST_MARGIN.l - HIST_MARGIN.r);
  if (!hasPlotly()) {
    clearPlot(div);
    div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded; counts: zero=" + hist.zero +
      " bins=" + (hist.counts || []).join(",") + " non-finite=" + (hist.nonfinite || 0)));
    return;
  }
  // a plot already there is updated in place (Plotly.react: ~2x faster than a new plot per click)
  if (!div._fullLayout) clearPlot(div);
  const layout = {
    title: { text: title, font: { size: 12 } }, height: 260, margin: { ...HIST_MARGIN },
    bargap: 0.05, showlegend: false, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
    xaxis: { tickvals: t.tickvals, ticktext: t.ticktext, range: t.range, tickangle: 0, title: { text: "|diff| (log bins; 0 = exact zero)", font: { size: 10 } }, zeroline: false },
    yaxis: { title: { text: "elements", font: { size: 10 } }, rangemode: "tozero" }, annotations: t.annotations,
  };
  const config = { displayModeBar: false, displaylogo: false, showLink: false, responsive: true };
  if (div._fullLayout) globalThis.Plotly.react(div, t.data, themed(div, layout), config);
  else globalThis.Plotly.newPlot(div, t.data, themed(div, layout), config);
}
