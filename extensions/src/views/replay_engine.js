// Replay on an engine (leapp_lab/views/deep_view.py, docs/deep-checks.md "Replay on an engine"): the
// pieces the Replay tab adds for an engine's sequence: where each node ran, the own vs inherited
// error per step of one output (two curves), and the steps × taps heatmap whose cells open that
// step's |diff| histogram. Hooks: [data-leapp-replay-engine=ENGINE], [data-leapp-replay-split=KEY],
// select[data-leapp-split-output], [data-leapp-taps-heatmap=KEY] (a table: td[data-leapp-taps-at="step/tap"],
// td[data-leapp-taps-first-cell]), [data-leapp-taps-cell] (the picked "step/tap"), [data-leapp-taps-first]
// (the first cell beyond the rule), [data-leapp-taps-local], [data-leapp-taps-hist].
import { h, kv } from "../shared/dom.js";
import { fmt, plotText } from "../shared/format.js";
import { drawHist, histTitle } from "../shared/histogram.js";
import { badColor, badness } from "../shared/colour.js";
import { clearPlot, hasPlotly, themed } from "../shared/plot.js";

const CONFIG = { displayModeBar: false, displaylogo: false, showLink: false, responsive: true };

// where each node of the pipeline ran, the timings and the engine's notes
export function engineInfo(eng) {
  if (!eng) return null;
  return h("div", { class: "leapp-engineinfo", "data-leapp-replay-engine": eng.engine },
    h("table", { class: "leapp-kv" }, h("thead", {}, h("tr", {}, ["node", "runs on", "build", "note"].map(x => h("th", {}, x)))),
      h("tbody", {}, eng.nodes.map(n => h("tr", { "data-leapp-engine-node": n.node }, h("td", {}, n.node), h("td", {}, n.runs_on),
        h("td", {}, n.source ? n.source + (n.build ? " · " + n.build : "") : "–"), h("td", { class: "leapp-wrap" }, n.note || ""))))),
    kv(Object.entries(eng.timings_s || {}).map(([k, v]) => ["time " + k.replace(/_/g, " ") + " (s)", v])),
    (eng.notes || []).length ? h("ul", { class: "leapp-notes" }, eng.notes.map(n => h("li", {}, n))) : null);
}

// the per-output summary of a sequence (engine runs add the split and the fitted growth): one line
// per output, every value on one line, scrolling sideways in a narrow window (leapp-kv-line)
export function outputsTable(run) {
  const eng = !!run.engine;
  const head = ["output", "first", "last", "max", "at step", "first step beyond tolerance", "growth / step (fitted)", "trend"]
    .concat(eng ? ["max vs fp32", "own error max", "inherited error max"] : []).concat(["worst element"]);
  return h("div", { class: "leapp-hscroll" }, h("table", { class: "leapp-kv leapp-kv-line", "data-leapp-replay-outputs": run.key },
    h("thead", {}, h("tr", {}, head.map(x => h("th", {}, x)))),
    h("tbody", {}, run.outputs.map(o => h("tr", { "data-leapp-output": o.output },
      [o.output, fmt(o.first), fmt(o.last), fmt(o.max_abs), fmt(o.max_step), fmt(o.first_fail_step === undefined ? o.first_fail : o.first_fail_step),
       o.growth_per_step === null || o.growth_per_step === undefined ? "–" : "×" + fmt(o.growth_per_step), o.trend || (o.grows ? "grows" : "–")]
        .concat(eng ? [fmt(o.fp32_max_abs), fmt(o.own_error_max), fmt(o.inherited_error_max)] : []).concat([o.worst_element || "–"])
        .map(x => h("td", {}, x)))))));
}

// own vs inherited error of one output over the steps (engine runs only)
export function drawSplit(div, run, output, onPick) {
  clearPlot(div);
  const s = (run.split || []).find(x => x.output === output);
  div.setAttribute("data-leapp-replay-split", run.key + "/" + output);
  if (!s) { div.append(h("div", { class: "leapp-empty" }, "no own / inherited split for " + output)); return; }
  if (!hasPlotly()) { div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded")); return; }
  const ids = s.x.map(k => run.key + "/" + k + "/" + output);
  const data = [
    { type: "scatter", mode: "lines+markers", name: "own: a step from the fp32 state", x: s.x, y: s.own, customdata: ids,
      line: { color: "#ef6c00" }, hovertemplate: "step %{x}<br>own %{y:.3e}<extra></extra>" },
    { type: "scatter", mode: "lines+markers", name: "inherited: through the state and upstream", x: s.x, y: s.inherited, customdata: ids,
      line: { color: "#6a1b9a" }, hovertemplate: "step %{x}<br>inherited %{y:.3e}<extra></extra>" },
    { type: "scatter", mode: "lines", name: "total vs fp32", x: s.x, y: s.fp32, customdata: ids,
      line: { color: "#9e9e9e", dash: "dot" }, hovertemplate: "step %{x}<br>vs fp32 %{y:.3e}<extra></extra>" }];
  const shapes = run.resets.map(k => ({ type: "line", x0: k - 0.5, x1: k - 0.5, yref: "paper", y0: 0, y1: 1, line: { color: "#6a1b9a", dash: "dash" } }));
  const layout = { title: { text: plotText(output) + ": own vs inherited error per step (max |diff| vs the fp32 export)", font: { size: 12 } },
                   height: 280, margin: { l: 60, r: 10, t: 40, b: 40 }, shapes, showlegend: true, legend: { orientation: "h", y: -0.25 },
                   paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
                   xaxis: { title: { text: "step", font: { size: 10 } } }, yaxis: { title: { text: "max |diff|", font: { size: 10 } }, rangemode: "tozero" } };
  globalThis.Plotly.newPlot(div, data, themed(div, layout), CONFIG);
  if (div.on) div.on("plotly_click", ev => { const p = ev.points && ev.points[0]; if (p && p.customdata) onPick(p.customdata); });
}

// the steps × taps heatmap of an engine replay; a cell opens that step's histogram of the tap
export function tapsBlock(t) {
  if (!t) return null;
  const box = h("div", { class: "leapp-tapsbox", "data-leapp-taps": t.key });
  const local = h("input", { type: "checkbox", "data-leapp-taps-local": "" });
  const heat = h("div", { class: "leapp-tapsheat", "data-leapp-taps-heatmap": t.key });
  const picked = h("div", { class: "leapp-muted", "data-leapp-taps-cell": "" }, "click a cell for that step's histogram");
  const hist = h("div", { class: "leapp-histplot", "data-leapp-taps-hist": "" });
  const first = t.first ? "first beyond nrmse " + fmt(t.max_nrmse) + ": step " + t.first.step + ", tap " + t.first.tap : "no cell beyond nrmse " + fmt(t.max_nrmse);
  box.append(...[h("div", { class: "leapp-sub" }, "taps of " + t.node + " at every step (tier " + t.tier + ")"),
    h("div", { class: "leapp-toolbar" }, h("span", { "data-leapp-taps-first": t.first ? t.first.step + "/" + t.first.tap : "" }, first), " ",
      h("label", {}, local, " local (the engine from the fp32 state)")),
    t.note ? h("div", { class: "leapp-note" }, t.note) : null, heat, picked, hist].filter(Boolean));
  const pick = (i, j) => {
    const useLocal = local.checked;
    picked.setAttribute("data-leapp-taps-cell", t.steps[i] + "/" + t.taps[j]);
    const z = (useLocal ? t.local_nrmse : t.nrmse)[i][j];
    picked.textContent = "step " + t.steps[i] + " · " + t.taps[j] + ": nrmse " + fmt(z) + (useLocal ? " (local)" : ", max |diff| " + fmt(t.max_abs[i][j]));
    const at = t.steps[i] + "/" + t.taps[j];
    for (const td of heat.querySelectorAll("td[data-leapp-taps-at]")) td.classList.toggle("leapp-selected", td.getAttribute("data-leapp-taps-at") === at);
    drawHist(hist, t.hists[i] ? t.hists[i][j] : null, histTitle("|engine − fp32|", t.taps[j], "step " + t.steps[i]));
  };
  const draw = () => drawHeat(heat, t, local.checked, pick);
  local.addEventListener("change", draw);
  box.draw = draw;
  box.pick = pick;
  return box;
}

// the cells of the heatmap (pure: extensions/test/taps_heat.test.js): per step a row of
// {at: "step/tap", z, color, first} coloured against the rule (max_nrmse), the first cell beyond it marked
export function heatCells(t, local) {
  const z = local ? t.local_nrmse : t.nrmse;
  const first = local ? t.first_local : t.first;
  const rule = { threshold: t.max_nrmse, worse: "above" };
  return t.steps.map((k, i) => t.taps.map((tap, j) => {
    const v = z[i] ? z[i][j] : null;
    return { at: k + "/" + tap, z: v, color: badColor(badness(v, rule), rule),
             first: !!first && first.step === k && first.tap === tap };
  }));
}

// a table, not a plotly heatmap: the vendored plotly.js basic bundle has no heatmap trace, and a
// table's cells are clickable and readable as they are
function drawHeat(div, t, local, onCell) {
  div.replaceChildren();
  const cells = heatCells(t, local);
  const title = (local ? "local " : "") + "nrmse per step and tap (✕: first beyond nrmse " + fmt(t.max_nrmse) + "; green below, red above)";
  const head = h("tr", {}, h("th", {}, "step"), t.taps.map(tap => h("th", { class: "leapp-tapshead", title: tap }, tap)));
  const body = cells.map((row, i) => h("tr", {}, h("th", {}, String(t.steps[i])), row.map((c, j) => {
    const td = h("td", { "data-leapp-taps-at": c.at, "data-leapp-taps-first-cell": c.first ? "true" : null,
                         title: "step " + t.steps[i] + " · " + t.taps[j] + ": nrmse " + fmt(c.z), style: "background:" + c.color },
                 c.first ? "✕" : "");
    td.addEventListener("click", () => onCell(i, j));
    return td;
  })));
  div.append(h("div", { class: "leapp-sub" }, title),
    h("div", { class: "leapp-tapsscroll" }, h("table", { class: "leapp-tapsgrid" }, h("thead", {}, head), h("tbody", {}, body))));
}
