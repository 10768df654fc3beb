// The per-element breakdown of a row (leapp_lab/model/semantics.py): max |diff| per element of the
// port, named by its LEAPP semantics (`knee`, `t+2/knee`) or by index, as a bar chart with the worst
// element marked, and a table of the same numbers (plotly or not). Clicking a bar (or a table row)
// picks that element: its row is selected and named in [data-leapp-element-picked].
// el: {names, max_abs, nrmse, worst, label} (trace_view.elements_dict); owner: the row id.
// Hooks: [data-leapp-elements=owner], tr[data-leapp-element=name][data-leapp-worst],
// [data-leapp-element-plot], [data-leapp-element-picked].
import { h } from "./dom.js";
import { fmt, plotText } from "./format.js";
import { clearPlot, hasPlotly, themed } from "./plot.js";

// the bars as plot traces (pure: extensions/test/elements.test.js)
export function elementTraces(el) {
  const ys = el.max_abs.map(v => (v === null || v === undefined ? 0 : v));
  const colors = el.names.map(n => (n === el.worst ? "#c62828" : "#ef6c00"));
  return [{ type: "bar", x: el.names.map(plotText), y: ys, customdata: el.names.map(plotText), marker: { color: colors },
            text: el.nrmse.map(v => "nrmse " + fmt(v)), textposition: "none",
            hovertemplate: "%{x}<br>max |diff| %{y:.3e}<br>%{text}<extra></extra>" }];
}

export function elementsBlock(el, owner) {
  if (!el || !el.names || !el.names.length) return null;
  const plot = h("div", { class: "leapp-elementplot", "data-leapp-element-plot": owner });
  const picked = h("div", { class: "leapp-muted", "data-leapp-element-picked": "" },
    el.worst ? "worst element: " + el.worst : "no element differs");
  const rows = el.names.map((n, i) => h("tr", { "data-leapp-element": n, "data-leapp-worst": n === el.worst ? "true" : null,
                                                 class: n === el.worst ? "leapp-row leapp-fail" : "leapp-row" },
    h("td", {}, n), h("td", {}, fmt(el.max_abs[i])), h("td", {}, fmt(el.nrmse[i]))));
  const pick = name => {
    for (const tr of rows) tr.classList.toggle("leapp-selected", tr.getAttribute("data-leapp-element") === name);
    const i = el.names.indexOf(name);
    if (i >= 0) picked.textContent = name + ": max |diff| " + fmt(el.max_abs[i]) + ", nrmse " + fmt(el.nrmse[i])
      + (name === el.worst ? " (worst element)" : "");
    picked.setAttribute("data-leapp-element-picked", name);
  };
  rows.forEach(tr => tr.addEventListener("click", () => pick(tr.getAttribute("data-leapp-element"))));
  const table = h("table", { class: "leapp-kv leapp-elements" },
    h("thead", {}, h("tr", {}, ["element", "max |diff|", "nrmse"].map(x => h("th", {}, x)))), h("tbody", {}, rows));
  const box = h("div", { class: "leapp-elementbox", "data-leapp-elements": owner },
    h("div", { class: "leapp-sub" }, "per element" + (el.label ? " (" + el.label + ")" : "") + " · worst: " + (el.worst || "–")),
    plot, picked, h("details", { class: "leapp-elementtable" }, h("summary", {}, el.names.length + " elements"), table));
  // drawn once the block is in the document (plotly sizes itself from its container)
  box.draw = () => drawElements(plot, el, pick);
  return box;
}

export function drawElements(div, el, onPick) {
  clearPlot(div);
  if (!hasPlotly()) { div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded")); return; }
  const many = el.names.length > 24;
  const layout = { height: 220, margin: { l: 50, r: 10, t: 10, b: many ? 90 : 60 }, showlegend: false, bargap: 0.15,
                   paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
                   xaxis: { type: "category", tickangle: -40, automargin: true, tickfont: { size: many ? 8 : 10 } },
                   yaxis: { title: { text: "max |diff|", font: { size: 10 } }, rangemode: "tozero" } };
  globalThis.Plotly.newPlot(div, elementTraces(el), themed(div, layout), { displayModeBar: false, displaylogo: false, showLink: false, responsive: true });
  if (div.on) div.on("plotly_click", ev => { const p = ev.points && ev.points[0]; if (p) onPick(el.names[p.pointIndex]); });
}
