// The |diff| histogram of one row and sample (leapp_lab/model/hist.py stores it): its bins as plot
// traces (pure: extensions/test/histogram.test.js) and its plot.
import { h } from "./dom.js";
import { clearPlot, hasPlotly, themed } from "./plot.js";

// Global log bins (leapp_lab/model/hist.py): bin b starts at the float64 whose bit pattern is b << 50.
const _f64 = new Float64Array(1), _u64 = new BigUint64Array(_f64.buffer);
export function binEdge(b) { _u64[0] = BigInt(b) << 50n; return _f64[0]; }

export function histTraces(hist, nonfiniteLabel) {
  // zero bin at x=0, log bins from x=2 on (one empty slot between): the x axis *is* log(|diff|);
  // the non-finite pairs, left out of every bin, in a bar of their own at the right end
  const xs = [0], ys = [hist.zero], text = ["exactly 0"], colors = ["#1565c0"];
  const counts = hist.counts || [], n = counts.length, first = hist.first_bin || 0;
  for (let i = 0; i < n; i++) {
    xs.push(i + 2); ys.push(counts[i]); colors.push("#ef6c00");
    text.push("[" + binEdge(first + i).toExponential(2) + ", " + binEdge(first + i + 1).toExponential(2) + ")");
  }
  const step = Math.max(1, Math.ceil(n / 7));
  const tickvals = [0], ticktext = ["0"];
  for (let i = 0; i < n; i += step) { tickvals.push(i + 2 - 0.5); ticktext.push(binEdge(first + i).toExponential(1)); }
  if (hist.nonfinite) {
    const x = n + 3;
    xs.push(x); ys.push(hist.nonfinite); colors.push("#6a1b9a"); text.push(nonfiniteLabel || "non-finite");
    tickvals.push(x); ticktext.push("non-finite");
  }
  const annotations = hist.nonfinite ? [{ x: n + 3, y: hist.nonfinite, yanchor: "bottom", showarrow: false, text: "non-finite " + hist.nonfinite,
                                          font: { size: 10, color: "#6a1b9a" } }] : [];
  return { data: [{ type: "bar", x: xs, y: ys, text, hovertemplate: "%{text}<br>count %{y}<extra></extra>",
                    marker: { color: colors }, width: 0.92, textposition: "none" }],
           tickvals, ticktext, annotations };
}

export function drawHist(div, hist, title, nonfiniteLabel) {
  if (!hist || (hist.zero === 0 && !(hist.counts || []).length && !hist.nonfinite)) {
    clearPlot(div);
    div.append(h("div", { class: "leapp-empty" }, "no histogram stored for this row"));
    return;
  }
  const t = histTraces(hist, nonfiniteLabel);
  if (!hasPlotly()) {
    clearPlot(div);
    div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded; counts: zero=" + hist.zero +
      " bins=" + (hist.counts || []).join(",") + " non-finite=" + (hist.nonfinite || 0)));
    return;
  }
  // a plot already there is updated in place (Plotly.react: ~2x faster than a new plot per click)
  if (!div._fullLayout) clearPlot(div);
  const layout = {
    title: { text: title, font: { size: 12 } }, height: 260, margin: { l: 50, r: 10, t: 34, b: 44 },
    bargap: 0.05, showlegend: false, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
    xaxis: { tickvals: t.tickvals, ticktext: t.ticktext, title: { text: "|diff| (log bins; 0 = exact zero)", font: { size: 10 } }, zeroline: false },
    yaxis: { title: { text: "elements", font: { size: 10 } }, rangemode: "tozero" }, annotations: t.annotations,
  };
  const config = { displayModeBar: false, displaylogo: false, showLink: false, responsive: true };
  if (div._fullLayout) globalThis.Plotly.react(div, t.data, themed(div, layout), config);
  else globalThis.Plotly.newPlot(div, t.data, themed(div, layout), config);
}
