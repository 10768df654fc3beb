// The compare view (several verify runs side by side; leapp_lab/views/compare_view.py): its cells,
// grouped header and side panel, drawn by the common table (tabs/table.js).
import { h, kv } from "../shared/dom.js";
import { fmt } from "../shared/format.js";
import { drawHist, histTitle } from "../shared/histogram.js";

// Data-driven and self-contained: a table whose columns carry `group` gets a grouped header row; cell
// types "verdict" (a run's verdict) and "flip" draw through CELL_TYPES; rows may carry extra
// data-leapp-* hooks in `attrs`; the selected row's panel shows every run (renderGroupPanel).

// A header row above the column labels: one cell per run of consecutive columns with the same group.
export function groupHeaderRow(table, shown) {
  const cols = shown || table.columns || [];
  if (!cols.some(c => c.group)) return null;
  const info = new Map((table.groups || []).map(g => [g.key, g]));
  const tr = h("tr", { class: "leapp-grouprow" });
  let i = 0;
  while (i < cols.length) {
    const g = cols[i].group || null;
    let j = i;
    while (j < cols.length && (cols[j].group || null) === g) j++;
    const gi = g ? info.get(g) || { label: g } : null;
    tr.append(h("th", { colspan: j - i, "data-leapp-group": g, title: gi ? gi.title : null,
                        class: g ? "leapp-group leapp-group-" + (gi.kind || "side") : null }, gi ? gi.label : ""));
    i = j;
  }
  return tr;
}

function verdictCell(v, r, c, table) {
  const side = (r.sides || {})[c.group] || {};
  const label = (table.status_labels || {})[v] || v || "–";
  const extra = side.tap_status && !["compared", "absent"].includes(side.tap_status) ? side.tap_status : null;
  return h("td", { class: "leapp-status leapp-gstart", "data-leapp-side": c.group, "data-leapp-verdict": v },
    h("span", { class: "leapp-pill leapp-" + v }, label),
    extra ? h("span", { class: "leapp-muted" }, " " + extra) : null,
    side.first_divergent ? h("span", { class: "leapp-firstmark", title: "first divergent row of this run" }, "◀ first") : null);
}

function flipCell(v, r, c, table) {
  const label = v ? ((table.flip_labels || {})[v] || v) : "";
  return h("td", { class: "leapp-flipcell leapp-gstart" + (v ? " leapp-" + v : "") }, label);
}

export const CELL_TYPES = { verdict: verdictCell, flip: flipCell };

// The side panel of a compare row: the sample picker, every run's |diff| histogram (one bin range for
// all, so the plots line up) and the metrics of every run side by side (with the change against the
// baseline for the aggregate).
export function renderGroupPanel(panel, r, state, table, onSample) {
  const plots = panel._leappPlots || (panel._leappPlots = new Map());
  const s = r.samples.find(x => x.key === state.sample) || r.samples[0];
  panel.setAttribute("data-leapp-hist-row", r.id);
  panel.setAttribute("data-leapp-hist-sample", s ? s.key : "");
  const picker = h("select", { "data-leapp-sample-picker": "", on: { change: e => onSample(e.target.value) } },
    r.samples.map(x => h("option", { value: x.key, selected: s && x.key === s.key }, x.label)));
  panel.append(h("div", { class: "leapp-histhead" },
    h("span", { class: "leapp-pill leapp-" + r.status }, (table.status_labels || {})[r.status] || r.status), " ",
    h("b", { class: "leapp-histname" }, r.id), " ",
    r.flip ? h("span", { class: "leapp-flipcell leapp-" + r.flip }, (table.flip_labels || {})[r.flip] || r.flip) : null, " ",
    r.samples.length > 1 ? h("label", {}, "sample ", picker) : h("span", { class: "leapp-muted" }, s ? s.label : "")));
  if (!s) return;
  const sides = (table.groups || []).filter(g => g.kind === "side");
  const row = h("div", { class: "leapp-cmp-plots" });
  panel.append(row);
  const draws = [];
  for (const g of sides) {
    const d = (s.sides || {})[g.key] || {};
    const v = ((r.sides || {})[g.key] || {}).status;
    if (!plots.has(g.key)) plots.set(g.key, h("div", { class: "leapp-histplot" }));
    const plot = plots.get(g.key);
    const box = h("div", { class: "leapp-cmp-side", "data-leapp-hist-group": g.key, "data-leapp-verdict": v },
      h("div", { class: "leapp-sub" }, h("span", { class: "leapp-pill leapp-" + v }, (table.status_labels || {})[v] || v), " ", g.label));
    row.append(box);
    if (d.present) {
      box.append(plot);
      draws.push(() => drawHist(plot, d.hist, histTitle(table.hist_title || "|diff|", r.id, g.label, s.label)));
    } else {
      box.append(h("div", { class: "leapp-empty" }, d.note || "absent in this run"));
    }
    if (d.present && d.note) box.append(h("div", { class: "leapp-note" }, d.note));
  }
  for (const draw of draws) draw();     // every box is in place first: each plot takes its own width
  const m = s.metrics || { head: [], rows: [] };
  const side = h("div", { class: "leapp-histside" });
  side.append(h("div", {}, h("div", { class: "leapp-sub" }, "metrics, run by run"),
    h("table", { class: "leapp-kv leapp-cmp-metrics" }, h("thead", {}, h("tr", {}, m.head.map(x => h("th", {}, x)))),
      h("tbody", {}, m.rows.map(row => h("tr", {}, h("th", {}, row.label),
        row.cells.map(([v, kind]) => h("td", { title: typeof v === "number" ? String(v) : null }, fmt(v, kind)))))))));
  if (r.info && r.info.length) side.append(h("div", {}, h("div", { class: "leapp-sub" }, "row"), kv(r.info)));
  panel.append(side);
}
