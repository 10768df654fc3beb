// The side panel of the selected row: its verdict and why, the sample picker, the |diff| histogram
// of the sample, its metrics, the row's facts and the sample's inputs. (A compare view draws its own
// panel: views/compare.js renderGroupPanel.)
import { h, kv, labelled } from "./dom.js";
import { fmt, shapeText } from "./format.js";
import { elementsBlock } from "./elements.js";
import { drawHist, histTitle } from "./histogram.js";
import { clearPlot } from "./plot.js";

export function whyBlock(r, table) {
  const words = table.reasons || {};
  const keys = (r.reason || "").split(",").map(x => x.trim()).filter(Boolean);
  const label = (table.status_labels || {})[r.status] || r.status;
  // r.why: the verdict in the view's own words (a repair segment: why it is kept or not)
  const text = r.why ? r.why : keys.length ? keys.map(k => words[k] || k).join("; ") : r.status === "pass" ? "no criterion fires" : "–";
  return h("div", { class: "leapp-why leapp-" + (r.tone || r.status), "data-leapp-why": r.reason || "" }, h("b", {}, label + " — why: "), text);
}

// panel: the (emptied) panel element; plot: the histogram's div, kept across rows (Plotly.react
// updates it in place); siblings: the rows of r's group (the picker then picks one of them);
// on.row(id): a sibling picked; on.sample(key): another sample of r picked; on.actions(r) (optional):
// buttons shown under the verdict.
export function drawRowPanel(panel, plot, r, sampleKey, siblings, view, table, on) {
  const s = r.samples.find(x => x.key === sampleKey) || r.samples[0];
  panel.setAttribute("data-leapp-hist-row", r.id);
  panel.setAttribute("data-leapp-hist-sample", s ? s.key : "");
  const picker = h("select", { "data-leapp-sample-picker": "", on: { change: e => {
    if (siblings) on.row(e.target.value); else on.sample(e.target.value);
  } } });
  const opts = siblings ? siblings.map(x => [x.id, x.samples[0] ? x.samples[0].label + " · " + x.status : x.id, x.id === r.id])
                        : r.samples.map(x => [x.key, x.label, s && x.key === s.key]);
  for (const [v, label, sel] of opts) picker.append(h("option", { value: v, selected: sel }, label));
  panel.append(h("div", { class: "leapp-histhead" },
    h("span", { class: "leapp-pill leapp-" + r.status }, (table.status_labels || {})[r.status] || r.status), " ",
    h("b", { class: "leapp-histname" }, r.id), r.sub ? h("span", { class: "leapp-muted" }, " " + r.sub) : null, " ",
    opts.length > 1 ? h("label", {}, "sample ", picker) : h("span", { class: "leapp-muted" }, s ? s.label : "")));
  panel.append(whyBlock(r, table));
  const actions = on.actions ? on.actions(r) : [];     // what other tabs offer for this row (a node's Layers)
  if (actions.length) panel.append(h("div", { class: "leapp-row-actions" }, actions));
  panel.append(plot);
  plot.style.display = s && s.hist === false ? "none" : "";   // a row without a histogram (repair): metrics only
  if (s && s.hist === false) clearPlot(plot);
  else drawHist(plot, s && s.hist, histTitle(table.hist_title || "|diff|", r.id, s ? s.label : ""), table.nonfinite_label);
  const note = (s && s.note) || r.note;
  if (note) panel.append(h("div", { class: "leapp-note" }, note));
  const els = s && s.elements ? elementsBlock(s.elements, r.id) : null;   // errors by meaning (elements.js)
  if (els) { panel.append(els); els.draw(); }
  const side = h("div", { class: "leapp-histside" });
  if (s) side.append(h("div", {}, h("div", { class: "leapp-sub" }, "metrics"), kv(labelled(table.panel_columns, s.m), "leapp-metrics")));
  if (r.info && r.info.length) side.append(h("div", {}, h("div", { class: "leapp-sub" }, "row"), kv(labelled(table.info_columns, r.info, true), "leapp-info")));
  const inputs = s ? (s.inputs || (view.inputs || {})[s.key] || []) : [];
  if (inputs.length) {
    side.append(h("div", {}, h("div", { class: "leapp-sub" }, "inputs of this sample"),
      h("table", { class: "leapp-kv leapp-inputs" }, h("thead", {}, h("tr", {}, ["input", "shape", "dtype", "range", "index"].map(x => h("th", {}, x)))),
        h("tbody", {}, inputs.map(i => h("tr", {}, h("td", {}, i.name), h("td", {}, shapeText(i.shape)), h("td", {}, i.dtype),
          h("td", {}, fmt(i.range)), h("td", {}, fmt(i.index))))))));
  }
  panel.append(side);
}
