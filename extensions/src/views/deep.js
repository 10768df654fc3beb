// The deep-check tabs of the trace view: replay, parity, adapters, exporters, isolation
// (leapp_lab/views/deep_view.py, docs/deep-checks.md).
import { statusColor } from "../shared/colour.js";
import { h, kv } from "../shared/dom.js";
import { fmt, plotText, shapeText } from "../shared/format.js";
import { elementsBlock } from "../shared/elements.js";
import { clearPlot, hasPlotly, themed } from "../shared/plot.js";
import { drawSplit, engineInfo, outputsTable, tapsBlock } from "./replay_engine.js";

// Self-contained: each deep tab's renderer (deepTab, tabs.js) fills its panel once; its show hook runs when
// the tab is shown (plotly sizes a plot only once it is visible). view.deep[section] holds one entry per
// graph (leapp_lab/views/deep_view.py). Hooks: tr[data-leapp-row][data-leapp-section][data-leapp-status],
// [data-leapp-deep-status] on each entry head, select[data-leapp-replay-run], [data-leapp-replay-plot],
// td[data-leapp-exporter][data-leapp-outcome], [data-leapp-advice], [data-leapp-decision],
// tr[data-leapp-decision-row][data-leapp-matched].

// The columns of a deep table: the ones the view dict gives the entry (or the replay run), {key, label,
// type}, defined once in Python (leapp_lab/views/deep_view.py DEEP_COLUMNS); none without.
export function deepColumns(e) {
  return (e && Array.isArray(e.columns) ? e.columns : []).map(c => [c.key, c.label, c.type]);
}

function deepTable(section, rows, onPick, labelOf, entry) {
  const cols = deepColumns(entry);
  const body = h("tbody", {});
  for (const r of rows) {
    const tr = h("tr", { "data-leapp-row": r.id, "data-leapp-section": section, "data-leapp-status": r.status,
                         class: "leapp-row leapp-" + r.status });
    if (onPick) tr.addEventListener("click", () => onPick(r.id));
    for (const [k, , type] of cols) {
      if (type === "status") tr.append(h("td", {}, h("span", { class: "leapp-pill leapp-" + r.status }, labelOf ? labelOf(r) : r.status)));
      else tr.append(h("td", { class: "leapp-" + type }, fmt(r.cells[k])));
    }
    body.append(tr);
  }
  if (!rows.length) body.append(h("tr", {}, h("td", { colspan: cols.length, class: "leapp-empty" }, "no rows")));
  return h("div", { class: "leapp-tablewrap leapp-deepwrap" }, h("table", { class: "leapp-table", "data-leapp-deep-table": section },
    h("thead", {}, h("tr", {}, cols.map(([, label, type]) => h("th", { class: "leapp-" + type }, label)))), body));
}

function deepHead(section, e, many, title) {
  return h("div", { class: "leapp-deephead", "data-leapp-deep-status": e.status, "data-leapp-deep-graph": e.graph },
    h("div", {}, many ? h("b", {}, e.graph + " · ") : null,
      h("span", { class: "leapp-pill leapp-" + (e.kind || "uncompared") }, e.status), " ", title),
    e.reason ? h("div", { class: "leapp-note" }, e.reason) : null,
    (e.notes || []).length ? h("ul", { class: "leapp-deepnotes" }, e.notes.map(n => h("li", {}, n))) : null);
}

function selectIn(box, id) {
  for (const tr of box.querySelectorAll("tr[data-leapp-row]")) {
    const on = tr.getAttribute("data-leapp-row") === id;
    tr.classList.toggle("leapp-selected", on);
    if (on && tr.scrollIntoView) tr.scrollIntoView({ block: "nearest" });
  }
}

// select a row and show its per-element breakdown (shared/elements.js) in elBox, when it has one
function selectWithElements(box, elBox, rows, id) {
  selectIn(box, id);
  const r = rows.find(x => x.id === id);
  elBox.replaceChildren();
  const block = r && r.elements ? elementsBlock(r.elements, r.id) : null;
  if (block) { elBox.append(block); block.draw(); }
}

function drawReplay(div, run, onPick) {
  clearPlot(div);
  if (!hasPlotly()) { div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded")); return; }
  const data = run.series.map(s => ({
    type: "scatter", mode: "lines+markers", name: plotText(s.output), x: s.x, y: s.y,
    customdata: s.x.map(k => run.key + "/" + k + "/" + s.output),
    marker: { color: s.status.map(statusColor), size: 8 }, line: { width: 1.5 },
    hovertemplate: plotText(s.output) + "<br>step %{x}<br>max |diff| %{y:.3e}<extra></extra>" }));
  const shapes = [], annotations = [];
  for (const k of run.resets) {
    shapes.push({ type: "line", x0: k - 0.5, x1: k - 0.5, yref: "paper", y0: 0, y1: 1, line: { color: "#6a1b9a", dash: "dash" } });
    annotations.push({ x: k - 0.5, yref: "paper", y: 1.02, text: "reset", showarrow: false, font: { size: 10, color: "#6a1b9a" } });
  }
  if (run.first_divergent) {
    shapes.push({ type: "line", x0: run.first_divergent.step, x1: run.first_divergent.step, yref: "paper", y0: 0, y1: 1,
                  line: { color: "#c62828", dash: "dot" } });
  }
  const layout = { title: { text: "max |exported − reference| per step (dashed: episode reset; dotted: first divergent step)", font: { size: 12 } },
                   height: 300, margin: { l: 60, r: 10, t: 40, b: 40 }, shapes, annotations, showlegend: true,
                   legend: { orientation: "h", y: -0.2 }, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
                   xaxis: { title: { text: "step", font: { size: 10 } }, dtick: 1 },
                   yaxis: { title: { text: "max |diff|", font: { size: 10 } }, rangemode: "tozero" } };
  globalThis.Plotly.newPlot(div, data, themed(div, layout), { displayModeBar: false, displaylogo: false, showLink: false, responsive: true });
  if (div.on) div.on("plotly_click", ev => { const p = ev.points && ev.points[0]; if (p && p.customdata) onPick(p.customdata); });
}

function renderReplayPanel(panel, entries, many) {
  const shows = [];
  for (const e of entries) {
    panel.append(deepHead("replay", e, many, "sequential replay, tier " + (e.tier || "?") + " (rtol " + fmt(e.rtol) + ", atol " + fmt(e.atol) + ")"));
    if (!e.runs.length) continue;
    const runLabel = r => (r.engine ? r.engine + " · " : "") + "tier (" + r.tier + ") · " + r.status;
    const picker = h("select", { "data-leapp-replay-run": e.graph }, e.runs.map(r => h("option", { value: r.key }, runLabel(r))));
    const info = h("div", { class: "leapp-deepinfo" });
    const plot = h("div", { class: "leapp-replayplot", "data-leapp-replay-plot": "" });
    const splitBox = h("div", {});
    const box = h("div", {});
    const elBox = h("div", { class: "leapp-deepelements" });
    const tapsBox = h("div", {});
    const engines = e.engines || [];
    for (const eng of engines) if (!e.runs.some(r => r.engine === eng.engine)) {
      // an engine that ran no sequence (failed / unavailable) still says why
      panel.append(h("div", { class: "leapp-note", "data-leapp-replay-engine": eng.engine }, eng.engine + ": " + eng.status + (eng.reason ? " · " + eng.reason : "")));
    }
    panel.append(h("div", { class: "leapp-toolbar" }, h("label", {}, "sequence ", picker),
      h("span", { class: "leapp-muted" }, " click a point to find its row")), info, plot, splitBox, box, elBox, tapsBox);
    const show = () => {
      const run = e.runs.find(r => r.key === picker.value) || e.runs[0];
      const eng = run.engine ? engines.find(x => x.engine === run.engine) : null;
      plot.setAttribute("data-leapp-replay-plot", run.key);
      // DOM replaceChildren writes a null as the text "null": the blocks a run lacks are left out
      info.replaceChildren(...[h("div", { class: "leapp-sub" }, run.title),
        kv([["status", run.status], ["steps", run.steps], run.seed !== null && run.seed !== undefined ? ["seed", run.seed] : null,
            ["episode resets at", run.resets.length ? run.resets.join(", ") : "–"],
            run.first_divergent ? ["first divergent", "step " + run.first_divergent.step + " · " + run.first_divergent.output] : null,
            ...run.breaks.map(([k, ks]) => ["fed back by Python, not the graph", k + " at " + ks.join(", ")]),
            ...(run.not_comparable || []).map(([k, ks]) => ["not comparable (LEAPP recorded no value)", k + " at " + ks.join(", ")]),
            run.reason ? ["reason", run.reason] : null]),
        engineInfo(eng),
        run.notes.length ? h("ul", { class: "leapp-notes" }, run.notes.map(n => h("li", {}, n))) : null,
        outputsTable(run)].filter(Boolean));
      const pick = id => selectWithElements(box, elBox, run.rows, id);
      box.replaceChildren(deepTable("replay", run.rows, pick, null, run));
      elBox.replaceChildren();
      drawReplay(plot, run, pick);
      splitBox.replaceChildren();
      if (run.engine && (run.split || []).length) {
        const outs = run.split.map(x => x.output);
        const sel = h("select", { "data-leapp-split-output": run.key }, outs.map(o => h("option", { value: o }, o)));
        const div = h("div", { class: "leapp-replayplot" });
        splitBox.append(h("div", { class: "leapp-toolbar" }, h("label", {}, "own vs inherited error of ", sel)), div);
        const drawIt = () => drawSplit(div, run, sel.value, pick);
        sel.addEventListener("change", drawIt);
        drawIt();
      }
      tapsBox.replaceChildren();
      const tb = eng && eng.taps && eng.taps.tier === run.tier ? tapsBlock(eng.taps) : null;
      if (tb) { tapsBox.append(tb); tb.draw(); }
    };
    picker.addEventListener("change", show);
    shows.push(show);
  }
  return () => shows.forEach(f => f());
}

function renderParityPanel(panel, entries, many) {
  for (const e of entries) {
    panel.append(deepHead("parity", e, many, "exported vs original on " + e.n + " fresh inputs (seed " + fmt(e.seed) + "; rtol " + fmt(e.rtol) + ", atol " + fmt(e.atol) + ")"));
    if (e.inputs.length) panel.append(h("div", { class: "leapp-sub" }, "how the fresh inputs were drawn (scales " + e.scales.join(", ") + ", shift " + fmt(e.shift) + ")"),
      h("table", { class: "leapp-kv" }, h("thead", {}, h("tr", {}, ["input", "shape", "dtype", "mean", "std", "rule"].map(x => h("th", {}, x)))),
        h("tbody", {}, e.inputs.map(i => h("tr", {}, h("td", {}, i.name), h("td", {}, shapeText(i.shape)), h("td", {}, i.dtype),
          h("td", {}, fmt(i.mean)), h("td", {}, fmt(i.std)), h("td", {}, i.rule))))));
    if (e.outputs.length) panel.append(h("div", { class: "leapp-sub" }, "per output"),
      h("table", { class: "leapp-kv", "data-leapp-parity-outputs": e.graph }, h("thead", {}, h("tr", {}, ["output", "failed", "max", "worst input", "min atol"].map(x => h("th", {}, x)))),
        h("tbody", {}, e.outputs.map(o => h("tr", {}, h("td", {}, o.output), h("td", {}, o.failed + "/" + o.samples), h("td", {}, fmt(o.max_abs)),
          h("td", {}, fmt(o.worst_sample)), h("td", {}, fmt(o.min_atol)))))));
    const box = h("div", {});
    const elBox = h("div", { class: "leapp-deepelements" });
    box.append(deepTable("parity", e.rows, id => selectWithElements(box, elBox, e.rows, id), null, e));
    panel.append(box, elBox);
  }
}

function renderAdaptersPanel(panel, entries, many) {
  for (const e of entries) {
    panel.append(deepHead("adapters", e, many, "each leapp.FunctionPatch adapter against the function it replaces (rtol " + fmt(e.rtol) + ", atol " + fmt(e.atol) + ")"));
    panel.append(h("table", { class: "leapp-kv" }, h("thead", {}, h("tr", {}, ["function", "adapter", "node", "calls traced", "result", "max |diff|", "worst case", "error"].map(x => h("th", {}, x)))),
      h("tbody", {}, e.adapters.map(a => h("tr", { "data-leapp-adapter": a.function, "data-leapp-status": a.status },
        h("td", {}, a.function), h("td", {}, a.replacement), h("td", {}, a.node || "–"), h("td", {}, fmt(a.calls)),
        h("td", {}, h("span", { class: "leapp-pill leapp-" + a.status }, a.status)), h("td", {}, fmt(a.max_abs)), h("td", {}, a.worst_case || "–"), h("td", {}, a.error || ""))))));
    const box = h("div", {});
    box.append(deepTable("adapters", e.rows, id => selectIn(box, id), null, e));
    panel.append(box);
  }
}

function renderExportersPanel(panel, entries, many) {
  for (const e of entries) {
    panel.append(deepHead("exporters", e, many, "each node with each backend, in fresh sessions (advice only: nothing was changed in your code; the body ran again " + e.reruns + "×)"));
    if (e.advice.length) panel.append(h("ul", { class: "leapp-advice" }, e.advice.map((a, i) => h("li", { "data-leapp-advice": e.nodes[i] || "" }, a))));
    const byKey = new Map(e.rows.map(r => [r.cells.node + "/" + r.id.split("/").pop(), r]));
    if (e.nodes.length) panel.append(h("table", { class: "leapp-table leapp-matrix", "data-leapp-exporter-matrix": e.graph },
      h("thead", {}, h("tr", {}, h("th", {}, "node"), e.backends.map(b => h("th", {}, b)))),
      h("tbody", {}, e.nodes.map(n => h("tr", {}, h("td", {}, n), e.backends.map(b => {
        const r = byKey.get(n + "/" + b);
        return h("td", { "data-leapp-exporter": n + "/" + b, "data-leapp-outcome": r ? r.outcome : "" },
          r ? h("span", { class: "leapp-pill leapp-" + r.status, title: r.cells.error || "" }, r.outcome + (r.cells.backend.endsWith("(yours)") ? " ★" : "")) : "–");
      }))))));
    const box = h("div", {});
    box.append(deepTable("exporters", e.rows, id => selectIn(box, id), r => r.outcome, e));
    panel.append(box);
  }
}

function renderIsolationPanel(panel, entries, many) {
  for (const e of entries) {
    panel.append(deepHead("isolation", e, many, "the body traced again with parts of LEAPP turned off (it ran again " + e.reruns + "×)"));
    if (e.decision) panel.append(h("div", { class: "leapp-decision", "data-leapp-decision": e.decision },
      h("b", {}, "decision: " + e.decision), " (row " + fmt(e.rule) + ") · ", e.explanation || ""));
    const box = h("div", {});
    box.append(deepTable("isolation", e.rows, id => selectIn(box, id), r => r.cells.verdict || (r.cells.status === "not run" ? "not run" : r.status), e));
    panel.append(box, h("div", { class: "leapp-sub" }, "decision table (the first matching row decides)"),
      h("table", { class: "leapp-kv leapp-decisiontable" }, h("thead", {}, h("tr", {}, ["row", "outcome pattern", "decision"].map(x => h("th", {}, x)))),
        h("tbody", {}, e.table.map(t => h("tr", { "data-leapp-decision-row": t.row, "data-leapp-matched": t.matched ? "true" : null, class: t.matched ? "leapp-matched" : null },
          h("td", {}, t.row), h("td", {}, t.pattern), h("td", {}, t.decision))))));
  }
}

const DRAW = { replay: renderReplayPanel, parity: renderParityPanel, adapters: renderAdaptersPanel,
               exporters: renderExportersPanel, isolation: renderIsolationPanel };
export const DEEP_SECTIONS = Object.keys(DRAW);

// one section into its panel; returns the hook to run when the tab is shown (or undefined)
function renderDeepSection(name, view, panel) {
  const deep = view.deep || {};
  if (!panel || !deep[name]) return undefined;
  return DRAW[name](panel, deep[name], (view.graphs || []).length > 1);
}

// every section into its panel (panels: tab id -> element); returns tab id -> show hook
export function renderDeep(view, panels) {
  const hooks = {};
  for (const name of DEEP_SECTIONS) {
    const onShow = renderDeepSection(name, view, panels[name]);
    if (onShow) hooks[name] = onShow;
  }
  return hooks;
}

// the tab renderer of one section (tabs.js)
export function deepTab(name) {
  return (ctx, panel) => {
    if (!(ctx.view.deep || {})[name]) return null;
    const onShow = renderDeepSection(name, ctx.view, panel);
    return onShow ? { show: onShow } : {};
  };
}
