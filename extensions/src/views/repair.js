// The repair view's own tab: "Error per segment" (bars; leapp_lab/views/repair_view.py writes
// view.bars). Its ranking is the common table (tabs/table.js).
import { h } from "../shared/dom.js";
import { plotText } from "../shared/format.js";
import { clearPlot, hasPlotly, themed } from "../shared/plot.js";

const cfg = { displayModeBar: false, displaylogo: false, showLink: false };
const LABEL_CHAR_PX = 6.2;        // plotly's 10 px annotation font, per character

// The layout of one bar chart (pure: extensions/test/repair.test.js): a log or linear y axis over
// the bars and the reference lines, and each line (the target, as built) labelled in the right
// margin, beside the plot, where no bar can be under it.
export function barsLayout(bars, title, y) {
  const lines = (bars.lines || []).filter(l => l.y !== null && l.y !== undefined);
  const ax = { type: bars.log ? "log" : "linear", title: { text: bars.ylabel || "", font: { size: 10 } } };
  const pos = [...y, ...lines.map(l => l.y)].filter(v => typeof v === "number" && v > 0);
  if (bars.log && pos.length) ax.range = [Math.log10(Math.min(...pos)) - 0.4, Math.log10(Math.max(...pos)) + 0.2];
  const right = Math.max(10, ...lines.map(l => Math.ceil(l.label.length * LABEL_CHAR_PX) + 10));
  return {
    height: 300, margin: { l: 60, r: right, t: 34, b: 90 }, showlegend: false,
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
    title: { text: title, font: { size: 12 } }, yaxis: ax, xaxis: { tickangle: -40, automargin: true, type: "category" },
    shapes: lines.map(l => ({ type: "line", xref: "paper", x0: 0, x1: 1, y0: l.y, y1: l.y, line: { color: l.color, dash: l.dash || "solid" } })),
    // two labels beside each other's line: the upper one above its line, the others below theirs
    annotations: lines.map(l => ({ xref: "paper", x: 1, xanchor: "left", xshift: 4, y: bars.log ? Math.log10(l.y) : l.y,
                                   yanchor: lines.length > 1 && l.y === Math.max(...lines.map(m => m.y)) ? "bottom" : lines.length > 1 ? "top" : "middle",
                                   text: l.label, showarrow: false, font: { size: 10, color: l.color } })),
  };
}

// repair: bars of one value per row (log y) against reference lines, and a second bar chart of steps
export function drawBars(div, bars, onPick) {
  for (const c of [...div.children]) clearPlot(c);
  div.replaceChildren();
  if (!hasPlotly()) { div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded")); return; }
  const color = st => st === "fail" ? "#c62828" : st === "pass" ? "#2e7d32" : "#90a4ae";
  const plot = (box, title, x, y, status, pick) => {
    globalThis.Plotly.newPlot(box, [{ type: "bar", x: x.map(plotText), y, marker: { color: status.map(color) },
      hovertemplate: "%{x}<br>%{y:.4e}<extra></extra>" }], themed(box, barsLayout(bars, title, y)), cfg);
    if (pick && box.on) box.on("plotly_click", ev => { const p = ev.points && ev.points[0]; if (p) pick(x[p.pointIndex]); });
  };
  const top = h("div", { "data-leapp-bars-plot": "candidates" }), bottom = h("div", { "data-leapp-bars-plot": "steps" });
  div.append(top, bottom);
  plot(top, bars.title || "", bars.x, bars.y, bars.status || [], onPick);
  if (bars.steps && bars.steps.x.length) plot(bottom, bars.steps.title || "", bars.steps.x, bars.steps.y, bars.steps.status || [], null);
}

// the tab renderer (tabs.js); a point picked in the plot opens its row in the table (handsToTable)
export function barsTab(ctx, panel) {
  const { view } = ctx;
  if (!view.bars) return { handsToTable: true };
  const barsDiv = h("div", { class: "leapp-profile", "data-leapp-bars": "" });
  panel.append(h("div", { class: "leapp-toolbar" }, h("span", { class: "leapp-muted" }, view.bars.caption || "")), barsDiv);
  return { show: () => drawBars(barsDiv, view.bars, id => ctx.select(id, null, "plot")), handsToTable: true };
}
