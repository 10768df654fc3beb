// The verify view's own tab: "Error growth" (profile), one metric over outputs and taps in model
// order (leapp_lab/views/verify_view.py writes view.profile). Its graph tab: views/engine_graph.js.
import { statusColor } from "../shared/colour.js";
import { h } from "../shared/dom.js";
import { fmt, plotText } from "../shared/format.js";
import { clearPlot, hasPlotly, themed } from "../shared/plot.js";

// The module a row belongs to, for grouping the x axis: the first two parts of its scope
// ("blocks.3.attn" -> "blocks.3"), so a block's taps share one band.
export function scopeGroup(scope) { return scope ? scope.split(".").slice(0, 2).join(".") : ""; }

export function profileTicks(profile) {
  // <= 40 points: every name. Otherwise one tick per module (thinned to <= 40 labels) and an
  // alternating band per module, or, without scopes, ~30 evenly spaced names. Names go in as
  // entities (plotText): plotly would read a tap named "block1 <b>" as bold markup.
  const n = profile.x.length, xs = profile.x.map((_, i) => i);
  if (n <= 40) return { tickvals: xs, ticktext: profile.x.map(plotText), bands: [] };
  const scopes = profile.scope || [];
  const runs = [];
  for (let i = 0; i < n; i++) {
    const g = scopeGroup(scopes[i]);
    if (!runs.length || runs[runs.length - 1].g !== g) runs.push({ g, start: i, end: i });
    else runs[runs.length - 1].end = i;
  }
  if (runs.length > 1 && runs.some(r => r.g)) {
    const every = Math.max(1, Math.ceil(runs.length / 40));
    const shown = runs.filter((_, k) => k % every === 0);
    return { tickvals: shown.map(r => r.start), ticktext: shown.map(r => plotText(r.g || "(no scope)")),
             bands: runs.filter((_, k) => k % 2 === 1).map(r => [r.start - 0.5, r.end + 0.5]) };
  }
  const every = Math.max(1, Math.ceil(n / 30));
  const vals = xs.filter(i => i % every === 0);
  return { tickvals: vals, ticktext: vals.map(i => plotText(profile.x[i])), bands: [] };
}

// each point's hover text: name · scope, and why it diverged; user strings as entities (plotText)
export function profileHover(profile) {
  const scopes = profile.scope || [], reasons = profile.reason || [];
  return profile.x.map((name, i) => plotText(name) + (scopes[i] ? " · " + plotText(scopes[i]) : "") +
    (reasons[i] ? "<br>why: " + plotText(reasons[i]) : ""));
}

// Where the points without a place on the axis go (pure: extensions/test/views.test.js). On a log
// axis an exact 0 (an int or bool tap, an exact layer) is the best value there is: it goes at the
// bottom, as an open circle labelled "0 (exact)", never among the values that are missing. A row
// with no value (null: every pair non-finite, or nothing to divide by) goes on a row of its own
// at the top; its label says "(non-finite)" only when a row's values were non-finite.
export function profilePoints(s, nonfinite) {
  const ys = s.y.map(v => (v === null || v === undefined ? null : v));
  const zeros = s.log ? ys.map((v, i) => (v === 0 ? i : -1)).filter(i => i >= 0) : [];
  const missing = ys.map((v, i) => (v === null || (s.log && v !== 0 && !(v > 0)) ? i : -1)).filter(i => i >= 0);
  const finite = ys.filter(v => v !== null && (!s.log || v > 0));
  const rule = s.threshold !== null && s.threshold !== undefined ? [s.threshold] : [];
  let top = finite.length ? Math.max(...finite) : 1;
  if (rule.length) top = Math.max(top, rule[0]);
  const low = finite.length || rule.length ? Math.min(...finite, ...rule) : 1;
  const nf = nonfinite || [];
  return {
    missing, zeros,
    yMissing: s.log ? top * 4 : top + Math.abs(top) * 0.12 + (top === 0 ? 1 : 0),
    yZero: low / 4,
    missingLabel: "× no " + s.label + (missing.some(i => nf[i]) ? " (non-finite)" : ""),
    zeroLabel: "○ " + s.label + " 0 (exact)",
  };
}

// The vertical marks (first divergent, first locally divergent, first beyond expected) with their
// labels above the plot: each mark keeps its line, marks at one row share one label ("first
// divergent · first locally divergent", on the first; the others' label is ""), and a label closer
// than `near` rows to the one before it is lifted a line (yshift), so two labels never print over
// each other. Pure: extensions/test/views.test.js.
export function profileMarks(profile, near) {
  const defs = [["first_divergent_index", "#c62828", "dot", "first divergent"],
                ["first_local_divergent_index", "#ef6c00", "dashdot", "first locally divergent"],
                ["first_beyond_expected_index", "#6a1b9a", "dash", profile.beyond_label || "first beyond expected"]];
  const marks = [];
  for (const [key, color, dash, label] of defs) {
    const i = profile[key];
    if (i === null || i === undefined) continue;
    const same = marks.find(m => m.i === i && m.label);
    if (same) same.label += " · " + label;
    marks.push({ i, color, dash, label: same ? "" : label, yshift: 0 });
  }
  marks.sort((a, b) => a.i - b.i);
  const labelled = marks.filter(m => m.label);
  for (let k = 1; k < labelled.length; k++) {
    if (labelled[k].i - labelled[k - 1].i < near) labelled[k].yshift = labelled[k - 1].yshift + 12;
  }
  return marks;
}

function drawProfile(div, profile, metric, onPick) {
  clearPlot(div);
  const s = (profile.series || []).find(x => x.key === metric) || (profile.series || [])[0];
  if (!s) { div.append(h("div", { class: "leapp-empty" }, "no profile")); return; }
  if (!hasPlotly()) { div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded")); return; }
  const n = profile.x.length, xs = profile.x.map((_, i) => i);
  const nonfinite = profile.nonfinite || [];
  const hover = profileHover(profile);
  // rows without a value go on a row of their own at the top, exact zeros of a log axis at the
  // bottom: shown, never dropped (profilePoints)
  const { missing, zeros, yMissing, yZero, missingLabel, zeroLabel } = profilePoints(s, nonfinite);
  const colours = (s.status || profile.status).map((st, i) => statusColor(s.status ? st : (profile.tone || [])[i] || st));
  const size = n <= 100 ? 8 : n <= 600 ? 6 : 4;
  const data = [{ type: "scatter", mode: n <= 600 ? "lines+markers" : "markers", x: xs, y: s.y, text: hover, customdata: profile.x,
                  hovertemplate: "%{text}<br>" + s.label + " %{y:.3e}<extra></extra>", line: { width: 1, color: "rgba(120,120,120,0.6)" },
                  // a local series is coloured by the rule on the local error; else by the row's tone
                  marker: { color: colours, size } }];
  if (zeros.length) {
    data.push({ type: "scatter", mode: "markers", x: zeros, y: zeros.map(() => yZero), customdata: zeros.map(i => profile.x[i]),
                text: zeros.map(i => hover[i] + "<br>" + s.label + " 0 (exact)"), hovertemplate: "%{text}<extra></extra>", name: "exact zero",
                marker: { symbol: "circle-open", size: size + 1, color: zeros.map(i => colours[i]) } });
  }
  if (missing.length) {
    data.push({ type: "scatter", mode: "markers", x: missing, y: missing.map(() => yMissing), customdata: missing.map(i => profile.x[i]),
                text: missing.map(i => hover[i] + "<br>" + (nonfinite[i] ? nonfinite[i] + " non-finite values: no " + s.label : "no " + s.label)),
                hovertemplate: "%{text}<extra></extra>", name: "no value",
                marker: { symbol: "x", size: size + 2, color: missing.map(i => nonfinite[i] ? "#6a1b9a" : "#9e9e9e") } });
  }
  const shapes = [], annotations = [];
  const ay = v => s.log ? Math.log10(v) : v;      // annotations on a log axis are placed in log10 units
  // a label is ~6 px a character at 10 px: labels within ~25 characters' width of the one before stack
  const plotPx = Math.max(200, (div.clientWidth || 800) - 70);
  const marks = profileMarks(profile, Math.max(1, Math.ceil((n + 1) * 150 / plotPx)));
  for (const m of marks) {
    shapes.push({ type: "line", x0: m.i, x1: m.i, yref: "paper", y0: 0, y1: 1, line: { color: m.color, dash: m.dash, width: 1.5 } });
    if (m.label) annotations.push({ x: m.i, yref: "paper", y: 1, yanchor: "bottom", yshift: m.yshift, text: m.label, showarrow: false, font: { size: 10, color: m.color } });
  }
  const lift = Math.max(0, ...marks.map(m => m.yshift));
  if (s.threshold !== null && s.threshold !== undefined) {
    shapes.push({ type: "line", xref: "paper", x0: 0, x1: 1, y0: s.threshold, y1: s.threshold, line: { color: "#c62828", dash: "dash", width: 1 } });
    annotations.push({ xref: "paper", x: 1, xanchor: "right", y: ay(s.threshold), yanchor: "bottom", showarrow: false,
                       text: "rule: " + s.label + (s.worse === "below" ? " < " : " > ") + fmt(s.threshold), font: { size: 10, color: "#c62828" } });
  }
  if (missing.length) annotations.push({ xref: "paper", x: 0, xanchor: "left", y: ay(yMissing), yanchor: "bottom", showarrow: false,
                                          text: missingLabel, font: { size: 10, color: "#6a1b9a" } });
  if (zeros.length) annotations.push({ xref: "paper", x: 0, xanchor: "left", y: ay(yZero), yanchor: "bottom", showarrow: false,
                                       text: zeroLabel, font: { size: 10, color: "#555" } });
  const ticks = profileTicks(profile);
  for (const [a, b] of ticks.bands) shapes.push({ type: "rect", x0: a, x1: b, yref: "paper", y0: 0, y1: 1, layer: "below",
                                                   line: { width: 0 }, fillcolor: "rgba(128,128,128,0.09)" });
  const yaxis = { type: s.log ? "log" : "linear", title: { text: s.label, font: { size: 10 } } };
  const layout = { title: { text: s.label + " over outputs and taps, in model order (" + n + " rows)", font: { size: 12 } },
                   height: n > 200 ? 480 : 320, margin: { l: 60, r: 10, t: 40 + lift, b: 90 }, shapes, annotations, showlegend: false,
                   dragmode: "zoom", hovermode: "closest", paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
                   xaxis: { tickvals: ticks.tickvals, ticktext: ticks.ticktext, tickangle: -40, automargin: true, range: [-1, n] },
                   yaxis };
  globalThis.Plotly.newPlot(div, data, themed(div, layout), { displayModeBar: true, displaylogo: false, showLink: false,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "toImage"], scrollZoom: false });
  if (div.on) div.on("plotly_click", ev => { const p = ev.points && ev.points[0]; if (p && p.customdata) onPick(p.customdata); });
}

// the tab renderer (tabs.js); a point picked in the plot opens its row in the table (handsToTable)
export function profileTab(ctx, panel) {
  const { view, state } = ctx;
  if (!view.profile) return { handsToTable: true };
  const series = view.profile.series || [];
  const profileDiv = h("div", { class: "leapp-profile" });
  const draw = () => drawProfile(profileDiv, view.profile, state.profileMetric, id => ctx.select(id, null, "plot"));
  const msel = h("select", { "data-leapp-profile-metric": "", on: { change: e => { state.profileMetric = e.target.value; draw(); } } },
    series.map(s => h("option", { value: s.key, selected: s.key === state.profileMetric }, s.label)));
  panel.append(h("div", { class: "leapp-toolbar" }, h("label", {}, "metric ", msel),
    h("span", { class: "leapp-muted" }, " each judged output and tap in model order. Drag to zoom, double-click to zoom out, " +
      "the plot's tool bar pans; dotted line = first divergent, dashed = the rule's threshold, × = no value " +
      "(non-finite), ○ at the bottom = exactly 0 (below a log axis), bands = modules; click a point to open its row")), profileDiv);
  return { show: draw, handsToTable: true };
}
