// leapp_lab front-end: one renderer for the Jupyter widget (anywidget) and the standalone HTML report.
//
// It draws a *view dict* built in Python (leapp_lab/views/viewdict.py); it never computes a metric,
// never talks to a kernel itself (the widget host passes callbacks) and never fetches anything.
// Every user string reaches the DOM through textContent / setAttribute; the only innerHTML is the
// graph SVG, which Python wrote with every string escaped.
//
// Stable DOM hooks (tests and users' automation rely on them):
//   tr[data-leapp-row][data-leapp-status][data-leapp-tap-status][data-leapp-first-divergent]
//   [data-leapp-node] on graph nodes, [data-leapp-hist-row][data-leapp-hist-sample] on the histogram panel.

const STATUS_ORDER = { fail: 0, uncompared: 1, pass: 2 };
const NUMERIC = new Set(["num", "int", "cos", "x"]);

function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "on") { for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn); continue; }
    e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// The one number format of every view (Python: leapp_lab/views/numfmt.py, same rules; a test feeds
// the same values through both). kind: num | int | cos | x | text | bool | shape | status.
const INT_LIMIT = 1e15;
function fmtNum(v) {
  if (Number.isNaN(v)) return "nan";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  if (v === 0) return "0";
  if (Number.isInteger(v) && Math.abs(v) < INT_LIMIT) return String(v);
  // 4 significant digits, half away from zero on the exact value (toExponential's rounding)
  const [mant, exp] = Math.abs(v).toExponential(3).split("e");
  const digits = mant.replace(".", ""), e = Number(exp), sign = v < 0 ? "-" : "";
  if (e >= -3 && e <= 3) {
    const whole = e >= 0 ? digits.slice(0, e + 1) : "0";
    const frac = (e >= 0 ? digits.slice(e + 1) : "0".repeat(-e - 1) + digits).replace(/0+$/, "");
    return sign + whole + (frac ? "." + frac : "");
  }
  return sign + digits[0] + "." + digits.slice(1) + "e" + (e >= 0 ? "+" : "-") + String(Math.abs(e)).padStart(2, "0");
}

export function fmt(v, kind) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (Array.isArray(v)) return "[" + v.map(x => fmt(x, kind === "shape" ? "num" : kind)).join(", ") + "]";
  if (typeof v === "number") {
    if (kind === "cos" && Number.isFinite(v)) {
      const s = Math.abs(v).toFixed(6);
      return (v < 0 && Number(s) !== 0 ? "-" : "") + s;
    }
    return fmtNum(v) + (kind === "x" ? "x" : "");
  }
  return String(v);
}

// SVG ids are page-global: a graph drawn twice on a page (or a marker on a hidden tab) must not take
// another drawing's marker. Python writes ids derived from the drawing (deterministic HTML); each
// insertion here renames them page-uniquely and rewrites the url(#id) references.
let svgSerial = 0;
function setSvg(box, svg) {
  box.innerHTML = svg || "";
  const n = ++svgSerial;
  for (const m of box.querySelectorAll("marker[id]")) {
    const old = m.id, id = old + "-" + n;
    m.id = id;
    for (const el of box.querySelectorAll("[marker-end], [marker-start]")) {
      for (const a of ["marker-end", "marker-start"]) {
        if (el.getAttribute(a) === "url(#" + old + ")") el.setAttribute(a, "url(#" + id + ")");
      }
    }
  }
}

function shapeText(s) { return s === null || s === undefined ? "?" : "[" + s.join(", ") + "]"; }

function kv(rows, cls) {
  return h("table", { class: "leapp-kv " + (cls || "") },
    h("tbody", {}, rows.filter(r => r).map(([k, v, kind]) => h("tr", {}, h("th", {}, k), h("td", {}, fmt(v, kind))))));
}

// -- histogram --------------------------------------------------------------------------------------
function histTraces(hist) {
  // zero bin at x=0, log bins from x=2 on (one empty slot between): the x axis *is* log(|diff|)
  const xs = [0], ys = [hist.zero], text = ["exactly 0"], colors = ["#1565c0"];
  const n = hist.counts.length;
  for (let i = 0; i < n; i++) {
    xs.push(i + 2); ys.push(hist.counts[i]); colors.push("#ef6c00");
    text.push("[" + hist.edges[i].toExponential(2) + ", " + hist.edges[i + 1].toExponential(2) + ")");
  }
  const step = Math.max(1, Math.ceil(n / 7));
  const tickvals = [0], ticktext = ["0"];
  for (let i = 0; i < n; i += step) { tickvals.push(i + 2 - 0.5); ticktext.push(hist.edges[i].toExponential(1)); }
  return { data: [{ type: "bar", x: xs, y: ys, text, hovertemplate: "%{text}<br>count %{y}<extra></extra>",
                    marker: { color: colors }, width: 0.92, textposition: "none" }],
           tickvals, ticktext };
}

function clearPlot(div) {
  // plotly keeps state on the element: purge it, or a later react() draws into a cleared div
  if (typeof globalThis.Plotly !== "undefined" && div._fullLayout) globalThis.Plotly.purge(div);
  div.replaceChildren();
}

// plotly draws its text in its own fixed dark grey: take the view's colour instead, so axis labels
// and titles stay readable under a dark JupyterLab theme (the div is in the document by now)
function themed(div, layout) {
  const fg = (typeof getComputedStyle === "function" && div.isConnected && getComputedStyle(div).color) || "#444";
  const grid = "rgba(128,128,128,0.3)";
  layout.font = Object.assign({ color: fg }, layout.font || {});
  for (const ax of ["xaxis", "yaxis"]) layout[ax] = Object.assign({ gridcolor: grid, linecolor: grid, zerolinecolor: grid }, layout[ax] || {});
  return layout;
}

function drawHist(div, hist, title) {
  clearPlot(div);
  if (!hist || (hist.zero === 0 && hist.counts.length === 0)) {
    div.append(h("div", { class: "leapp-empty" }, "no histogram stored for this row"));
    return;
  }
  const t = histTraces(hist);
  if (typeof globalThis.Plotly === "undefined") {
    div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded; counts: zero=" + hist.zero +
      " bins=" + hist.counts.join(",")));
    return;
  }
  const layout = {
    title: { text: title, font: { size: 12 } }, height: 260, margin: { l: 50, r: 10, t: 34, b: 44 },
    bargap: 0.05, showlegend: false, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
    xaxis: { tickvals: t.tickvals, ticktext: t.ticktext, title: { text: "|diff| (log bins; 0 = exact zero)", font: { size: 10 } }, zeroline: false },
    yaxis: { title: { text: "elements", font: { size: 10 } }, rangemode: "tozero" },
  };
  globalThis.Plotly.newPlot(div, t.data, themed(div, layout), { displayModeBar: false, displaylogo: false, showLink: false, responsive: true });
}

function drawProfile(div, profile, metric, onPick) {
  clearPlot(div);
  const s = (profile.series || []).find(x => x.key === metric) || (profile.series || [])[0];
  if (!s) { div.append(h("div", { class: "leapp-empty" }, "no profile")); return; }
  if (typeof globalThis.Plotly === "undefined") { div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded")); return; }
  const xs = profile.x.map((_, i) => i);
  const data = [{ type: "scatter", mode: "lines+markers", x: xs, y: s.y, text: profile.x,
                  hovertemplate: "%{text}<br>" + s.label + " %{y:.3e}<extra></extra>",
                  marker: { color: profile.status.map(st => st === "fail" ? "#c62828" : st === "pass" ? "#2e7d32" : "#9e9e9e"), size: 8 } }];
  const shapes = [];
  if (profile.first_divergent_index !== null && profile.first_divergent_index !== undefined) {
    shapes.push({ type: "line", x0: profile.first_divergent_index, x1: profile.first_divergent_index, yref: "paper", y0: 0, y1: 1,
                  line: { color: "#c62828", dash: "dot" } });
  }
  const layout = { title: { text: s.label + " over outputs and taps, in model order", font: { size: 12 } }, height: 300,
                   margin: { l: 60, r: 10, t: 34, b: 90 }, shapes, showlegend: false,
                   paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
                   xaxis: { tickvals: xs, ticktext: profile.x, tickangle: -40, automargin: true },
                   yaxis: { type: s.log ? "log" : "linear", title: { text: s.label, font: { size: 10 } } } };
  globalThis.Plotly.newPlot(div, data, themed(div, layout), { displayModeBar: false, displaylogo: false, showLink: false });
  if (div.on) div.on("plotly_click", ev => { const p = ev.points && ev.points[0]; if (p) onPick(profile.x[p.pointIndex]); });
}

// repair: bars of one value per row (log y) against reference lines, and a second bar chart of steps
function drawBars(div, bars, onPick) {
  for (const c of [...div.children]) clearPlot(c);
  div.replaceChildren();
  if (typeof globalThis.Plotly === "undefined") { div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded")); return; }
  const color = st => st === "fail" ? "#c62828" : st === "pass" ? "#2e7d32" : "#90a4ae";
  const cfg = { displayModeBar: false, displaylogo: false, showLink: false };
  const yaxis = { type: bars.log ? "log" : "linear", title: { text: bars.ylabel || "", font: { size: 10 } } };
  const lines = (bars.lines || []).filter(l => l.y !== null && l.y !== undefined);
  const base = { height: 300, margin: { l: 60, r: 10, t: 34, b: 90 }, showlegend: false,
                 paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)" };
  const plot = (box, title, x, y, status, pick) => {
    const ax = Object.assign({}, yaxis);
    const pos = [...y, ...lines.map(l => l.y)].filter(v => typeof v === "number" && v > 0);
    if (bars.log && pos.length) ax.range = [Math.log10(Math.min(...pos)) - 0.4, Math.log10(Math.max(...pos)) + 0.2];
    globalThis.Plotly.newPlot(box, [{ type: "bar", x, y, marker: { color: status.map(color) },
      hovertemplate: "%{x}<br>%{y:.4e}<extra></extra>" }], themed(box, Object.assign({}, base, {
      title: { text: title, font: { size: 12 } }, yaxis: ax, xaxis: { tickangle: -40, automargin: true, type: "category" },
      shapes: lines.map(l => ({ type: "line", xref: "paper", x0: 0, x1: 1, y0: l.y, y1: l.y, line: { color: l.color, dash: l.dash || "solid" } })),
      annotations: lines.map(l => ({ xref: "paper", x: 1, xanchor: "right", y: bars.log ? Math.log10(l.y) : l.y, text: l.label, showarrow: false, font: { size: 10, color: l.color }, yanchor: "bottom" })) })), cfg);
    if (pick && box.on) box.on("plotly_click", ev => { const p = ev.points && ev.points[0]; if (p) pick(x[p.pointIndex]); });
  };
  const top = h("div", { "data-leapp-bars-plot": "candidates" }), bottom = h("div", { "data-leapp-bars-plot": "steps" });
  div.append(top, bottom);
  plot(top, bars.title || "", bars.x, bars.y, bars.status || [], onPick);
  if (bars.steps && bars.steps.x.length) plot(bottom, bars.steps.title || "", bars.steps.x, bars.steps.y, bars.steps.status || [], null);
}

// -- the view ---------------------------------------------------------------------------------------
export function renderView(el, view, host) {
  host = host || {};
  el.replaceChildren();
  if (!view || !view.kind) { el.append(h("div", { class: "leapp-empty" }, "(empty leapp_lab view)")); return {}; }
  const table = view.table || { rows: [], columns: [] };
  const rows = table.rows || [];
  const byId = new Map(rows.map(r => [r.id, r]));
  const groups = new Map();
  for (const r of rows) if (r.group) { if (!groups.has(r.group)) groups.set(r.group, []); groups.get(r.group).push(r); }
  const state = { tab: (view.tabs && view.tabs[0] && view.tabs[0].id) || "table", row: null, sample: null,
                  sortKey: null, sortDir: 1, onlyBad: false, node: null, logLevel: 0, logSection: "",
                  profileMetric: view.profile && view.profile.series && view.profile.series[0] ? view.profile.series[0].key : null };

  const root = h("div", { class: "leapp-view", "data-leapp-kind": view.kind, "data-leapp-status": view.status });
  el.append(root);

  // header
  root.append(h("div", { class: "leapp-head" },
    h("div", { class: "leapp-title" }, h("span", { class: "leapp-dot leapp-" + view.status }), view.title),
    view.subtitle ? h("div", { class: "leapp-subtitle" }, view.subtitle) : null,
    h("div", { class: "leapp-badges" }, (view.badges || []).map(b =>
      h("span", { class: "leapp-badge" + (b.status ? " leapp-" + b.status : "") }, h("b", {}, b.label), " ", fmt(b.value)))),
    (view.notes || []).length ? h("ul", { class: "leapp-notes" }, view.notes.map(n => h("li", {}, n))) : null));

  // tabs
  const tabBar = h("div", { class: "leapp-tabs", role: "tablist" });
  const panels = {};
  root.append(tabBar);
  for (const t of view.tabs || []) {
    tabBar.append(h("button", { class: "leapp-tab", "data-leapp-tab": t.id, role: "tab", on: { click: () => { showTab(t.id); if (t.id === "table") refocus(); } } }, t.label));
    panels[t.id] = h("div", { class: "leapp-panel", "data-leapp-panel": t.id });
    root.append(panels[t.id]);
  }
  function showTab(id) {
    state.tab = id;
    for (const b of tabBar.children) b.classList.toggle("leapp-active", b.dataset.leappTab === id);
    for (const [k, p] of Object.entries(panels)) p.style.display = k === id ? "" : "none";
    if (id === "profile" && view.profile) drawProfile(profileDiv, view.profile, state.profileMetric, id2 => select(id2, null, true));
    if (id === "bars" && view.bars) drawBars(barsDiv, view.bars, id2 => select(id2, null, true));
    if (id === "table" && state.row) renderHist();
  }

  // ---- table + histogram panel
  const tbody = h("tbody", {});
  const thead = h("thead", {});
  const tableEl = h("table", { class: "leapp-table" }, thead, tbody);
  // After a toolbar click, focus goes back to the table: ↑/↓ keep moving rows instead of reaching the
  // notebook, which would move between cells in command mode.
  const refocus = () => { if (wrap.isConnected) wrap.focus({ preventScroll: true }); };
  const filterBox = h("input", { type: "checkbox", "data-leapp-filter": "divergent", on: { change: e => { state.onlyBad = e.target.checked; fillRows(); refocus(); } } });
  const sortInfo = h("span", { class: "leapp-sortinfo" }, "model order");
  // data-lm-suppress-shortcuts: JupyterLab must not take ↑/↓ to move between notebook cells here
  const wrap = h("div", { class: "leapp-tablewrap", tabindex: "0", "data-lm-suppress-shortcuts": "true",
                          on: { keydown: onKey } }, tableEl);
  const histPanel = h("div", { class: "leapp-hist", "data-leapp-hist-row": "", "data-leapp-hist-sample": "" });
  if (panels.table) {
    panels.table.append(h("div", { class: "leapp-split" },
      h("div", { class: "leapp-left" },
        h("div", { class: "leapp-toolbar" }, h("span", { class: "leapp-ttitle" }, table.title || ""),
          h("label", {}, filterBox, " " + (table.filter_label || "divergent only")),
          sortInfo, h("button", { class: "leapp-btn", "data-leapp-sort-reset": "", on: { click: () => { state.sortKey = null; fillRows(); refocus(); } } }, "back to model order")),
        table.rule ? h("div", { class: "leapp-rule" }, table.rule) : null,
        wrap),
      histPanel));
  }
  const headRow = h("tr", {});
  for (const c of table.columns || []) {
    headRow.append(h("th", { "data-leapp-col": c.key, class: "leapp-" + c.type, title: (c.description ? c.description + " · " : "") + "sort by " + c.label,
      on: { click: () => { if (state.sortKey === c.key) state.sortDir = -state.sortDir; else { state.sortKey = c.key; state.sortDir = NUMERIC.has(c.type) && c.type !== "int" ? -1 : 1; } fillRows(); refocus(); } } }, c.label));
  }
  thead.append(headRow);
  const rowEls = new Map();

  function cmp(a, b) {
    const k = state.sortKey, col = (table.columns || []).find(c => c.key === k);
    let x = a.cells[k], y = b.cells[k];
    if (col && col.type === "status") { x = STATUS_ORDER[x] ?? 9; y = STATUS_ORDER[y] ?? 9; }
    if (x === null || x === undefined) return (y === null || y === undefined) ? 0 : 1;   // missing values last
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : x > y ? 1 : 0) * state.sortDir;
  }
  function visibleRows() {
    let rs = rows.filter(r => !state.onlyBad || r.status === "fail");
    if (state.sortKey) rs = rs.slice().sort(cmp);
    return rs;
  }
  function fillRows() {
    tbody.replaceChildren(); rowEls.clear();
    const col = (table.columns || []).find(c => c.key === state.sortKey);
    sortInfo.textContent = col ? "sorted by " + col.label + (state.sortDir > 0 ? " ↑" : " ↓") : "model order";
    for (const th of headRow.children) th.classList.toggle("leapp-sorted", th.dataset.leappCol === state.sortKey);
    for (const r of visibleRows()) {
      const tr = h("tr", { "data-leapp-row": r.id, "data-leapp-status": r.status, "data-leapp-tap-status": r.tap_status,
                           "data-leapp-first-divergent": r.first_divergent ? "true" : null,
                           class: "leapp-row leapp-" + r.status + (r.first_divergent ? " leapp-first" : ""),
                           on: { click: () => select(r.id, null, true) } });
      for (const c of table.columns || []) {
        const v = r.cells[c.key];
        if (c.type === "status") {
          const label = (table.status_labels || {})[r.status] || r.status;
          const extra = r.tap_status && r.tap_status !== "compared" ? r.tap_status : null;
          tr.append(h("td", { class: "leapp-status" }, h("span", { class: "leapp-pill leapp-" + r.status }, label),
            extra ? h("span", { class: "leapp-muted" }, " " + extra) : null,
            r.first_divergent ? h("span", { class: "leapp-firstmark", title: "first divergent row in model order" }, "◀ first") : null));
        } else {
          tr.append(h("td", { class: "leapp-" + c.type, title: typeof v === "number" ? String(v) : null }, fmt(v, c.type)));
        }
      }
      if (r.id === state.row) tr.classList.add("leapp-selected");
      rowEls.set(r.id, tr); tbody.append(tr);
    }
    if (!tbody.children.length) tbody.append(h("tr", {}, h("td", { colspan: (table.columns || []).length, class: "leapp-empty" }, "no rows")));
  }

  function select(id, sampleKey, fromUser) {
    const r = byId.get(id);
    if (!r) return;
    state.row = id;
    state.sample = sampleKey ?? r.default_sample ?? (r.samples[0] && r.samples[0].key);
    if (r.node) state.node = r.node;
    for (const [rid, tr] of rowEls) tr.classList.toggle("leapp-selected", rid === id);
    const tr = rowEls.get(id);
    if (tr && tr.scrollIntoView) tr.scrollIntoView({ block: "nearest" });
    if (state.tab !== "table" && fromUser && panels.table && (state.tab === "profile" || state.tab === "bars")) showTab("table");
    renderHist();
    renderNode();
    if (fromUser && host.onSelect) host.onSelect(id, state.sample);
  }

  function onKey(e) {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    e.preventDefault();
    e.stopPropagation();
    const ids = visibleRows().map(r => r.id);
    if (!ids.length) return;
    const i = ids.indexOf(state.row);
    const j = i < 0 ? 0 : Math.min(ids.length - 1, Math.max(0, i + (e.key === "ArrowDown" ? 1 : -1)));
    select(ids[j], null, true);
  }

  const histPlot = h("div", { class: "leapp-histplot" });
  function renderHist() {
    histPanel.replaceChildren();
    const r = byId.get(state.row);
    if (!r) { histPanel.append(h("div", { class: "leapp-empty" }, "click a row to see its |diff| histogram")); return; }
    const siblings = r.group ? groups.get(r.group) : null;
    let s = r.samples.find(x => x.key === state.sample) || r.samples[0];
    histPanel.setAttribute("data-leapp-hist-row", r.id);
    histPanel.setAttribute("data-leapp-hist-sample", s ? s.key : "");
    const picker = h("select", { "data-leapp-sample-picker": "", on: { change: e => {
      if (siblings) select(e.target.value, null, true); else { state.sample = e.target.value; renderHist(); if (host.onSelect) host.onSelect(r.id, state.sample); }
    } } });
    const opts = siblings ? siblings.map(x => [x.id, x.samples[0] ? x.samples[0].label + " · " + x.status : x.id, x.id === r.id])
                          : r.samples.map(x => [x.key, x.label, s && x.key === s.key]);
    for (const [v, label, sel] of opts) picker.append(h("option", { value: v, selected: sel }, label));
    histPanel.append(h("div", { class: "leapp-histhead" },
      h("span", { class: "leapp-pill leapp-" + r.status }, (table.status_labels || {})[r.status] || r.status), " ",
      h("b", { class: "leapp-histname" }, r.id), " ",
      opts.length > 1 ? h("label", {}, "sample ", picker) : h("span", { class: "leapp-muted" }, s ? s.label : "")));
    histPanel.append(histPlot);
    histPlot.style.display = s && s.hist === false ? "none" : "";   // a row without a histogram (repair): metrics only
    if (s && s.hist === false) clearPlot(histPlot);
    else drawHist(histPlot, s && s.hist, (table.hist_title || "|diff|") + " · " + r.id + " · " + (s ? s.label : ""));
    if (s && s.note) histPanel.append(h("div", { class: "leapp-note" }, s.note));
    const side = h("div", { class: "leapp-histside" });
    if (s) side.append(h("div", {}, h("div", { class: "leapp-sub" }, "metrics"), kv(s.metrics || [], "leapp-metrics")));
    if (r.info && r.info.length) side.append(h("div", {}, h("div", { class: "leapp-sub" }, "row"), kv(r.info)));
    if (s && s.inputs && s.inputs.length) {
      side.append(h("div", {}, h("div", { class: "leapp-sub" }, "inputs of this sample"),
        h("table", { class: "leapp-kv leapp-inputs" }, h("thead", {}, h("tr", {}, ["input", "shape", "dtype", "range", "index"].map(x => h("th", {}, x)))),
          h("tbody", {}, s.inputs.map(i => h("tr", {}, h("td", {}, i.name), h("td", {}, shapeText(i.shape)), h("td", {}, i.dtype),
            h("td", {}, fmt(i.range)), h("td", {}, fmt(i.index))))))));
    }
    histPanel.append(side);
  }

  // ---- graph tab
  if (panels.graph) {
    for (const g of view.graphs || []) {
      const box = h("div", { class: "leapp-graph" });
      setSvg(box, g.svg);     // written by leapp_lab.views.graphs with every string escaped
      panels.graph.append(h("div", { class: "leapp-graphhead" }, h("b", {}, g.name), " · ", g.status, " · verdict ", g.verdict,
        h("span", { class: "leapp-muted" }, " (layout: " + g.layout + "; click a node to open it; dashed = feedback)")),
        ...(g.error ? [h("div", { class: "leapp-note" }, g.error)] : []), box);
      for (const n of box.querySelectorAll("[data-leapp-node]")) {
        n.addEventListener("click", () => { state.node = n.getAttribute("data-leapp-node"); renderNode(); showTab("node"); });
      }
    }
    if (!(view.graphs || []).length) panels.graph.append(h("div", { class: "leapp-empty" }, "no graph"));
  }

  // ---- node tab
  const nodeNames = Object.keys(view.nodes || {});
  const nodeSelect = h("select", { "data-leapp-node-picker": "", on: { change: e => { state.node = e.target.value; renderNode(); } } },
    nodeNames.map(n => h("option", { value: n }, n)));
  const nodeBody = h("div", { class: "leapp-nodebody" });
  if (panels.node) panels.node.append(h("div", { class: "leapp-toolbar" }, h("label", {}, "node ", nodeSelect)), nodeBody);
  function renderNode() {
    if (!panels.node) return;
    const n = (view.nodes || {})[state.node] || (view.nodes || {})[nodeNames[0]];
    nodeBody.replaceChildren();
    if (!n) { nodeBody.append(h("div", { class: "leapp-empty" }, "no node")); return; }
    nodeSelect.value = state.node && view.nodes[state.node] ? state.node : nodeNames[0];
    nodeBody.setAttribute("data-leapp-node-panel", n.name);
    nodeBody.append(kv([["node", n.name], ["verdict", n.verdict], ["backend", n.backend], ["artifact", n.artifact],
      ["samples recorded", n.samples], n.dropped_inputs.length ? ["inputs LEAPP dropped", n.dropped_inputs.join(", ")] : null,
      n.error ? ["error", n.error] : null]));
    nodeBody.append(h("div", { class: "leapp-sub" }, "ports"),
      h("table", { class: "leapp-kv" }, h("thead", {}, h("tr", {}, ["port", "dir", "dtype", "shape", "role", "source"].map(x => h("th", {}, x)))),
        h("tbody", {}, n.ports.map(p => h("tr", {}, h("td", {}, p.name + (p.traced_name ? " (traced " + p.traced_name + ")" : "")),
          h("td", {}, p.direction), h("td", {}, p.dtype || "?"), h("td", {}, shapeText(p.shape)), h("td", {}, p.role),
          h("td", {}, (p.source || "") + (p.feedback ? " (feedback)" : "")))))));
    if (n.hazards.length) nodeBody.append(h("div", { class: "leapp-sub" }, "hazards"),
      h("ul", { class: "leapp-hazards" }, n.hazards.map(z => h("li", {}, h("b", {}, z.kind), z.port ? " · " + z.port : "", ": ", z.message))));
    if (n.fx) {
      nodeBody.append(h("div", { class: "leapp-sub" }, "FX graph (" + n.fx.n_nodes + " nodes" +
        (n.fx.suspects.length ? "; " + n.fx.suspects.length + " flagged literal(s) in red" : "") + ")"));
      if (n.fx.suspects.length) nodeBody.append(h("ul", { class: "leapp-suspects" }, n.fx.suspects.map(s =>
        h("li", { "data-leapp-suspect": s.name }, h("b", {}, s.name), " = ", s.target, "(", s.args.join(", "), ")  literals: ", s.literals.join(", ")))));
      const g = h("div", { class: "leapp-graph leapp-fx" });
      setSvg(g, n.fx.svg);   // escaped in Python
      nodeBody.append(g);
      const marks = new Set(n.fx.code_marks || []);
      nodeBody.append(h("pre", { class: "leapp-code" }, (n.fx.code || "").split("\n").map((line, i) =>
        h("span", { class: marks.has(i) ? "leapp-mark" : null }, line + "\n"))));
    }
  }

  // ---- hazards tab
  if (panels.hazards) {
    const hz = view.hazards || [];
    panels.hazards.append(hz.length ? h("table", { class: "leapp-table" },
      h("thead", {}, h("tr", {}, ["kind", "node", "port", "samples", "what it means"].map(x => h("th", {}, x)))),
      h("tbody", {}, hz.map(z => h("tr", { "data-leapp-hazard": z.kind, class: "leapp-row",
        on: { click: () => { if (z.node) { state.node = (view.graphs.length > 1 ? z.graph + ":" : "") + z.node; renderNode(); showTab("node"); } } } },
        h("td", {}, z.kind), h("td", {}, z.node || "–"), h("td", {}, z.port || "–"), h("td", {}, z.samples.join(", ")), h("td", {}, z.message)))))
      : h("div", { class: "leapp-empty" }, "no hazards found"));
  }

  // ---- log tab
  if (panels.log && view.log) {
    const L = view.log;
    const levelNo = new Map(L.records.map(r => [r.level, r.levelno]));
    const lvSel = h("select", { "data-leapp-log-level": "", on: { change: e => { state.logLevel = Number(e.target.value); fillLog(); } } },
      h("option", { value: "0" }, "all levels"), (L.levels || []).map(l => h("option", { value: String(levelNo.get(l)) }, l + " and above")));
    const secSel = h("select", { "data-leapp-log-section": "", on: { change: e => { state.logSection = e.target.value; fillLog(); } } },
      h("option", { value: "" }, "all sections"), (L.sections || []).map(s => h("option", { value: s }, s)));
    const list = h("div", { class: "leapp-log" });
    const count = h("span", { class: "leapp-muted" });
    panels.log.append(h("div", { class: "leapp-toolbar" }, lvSel, " ", secSel, " ", count,
      L.truncated ? h("span", { class: "leapp-muted" }, " (" + L.truncated + " older records not shown)") : null), list);
    function fillLog() {
      list.replaceChildren();
      let n = 0;
      for (const r of L.records) {
        if (r.levelno < state.logLevel || (state.logSection && r.section !== state.logSection)) continue;
        n++;
        list.append(h("div", { class: "leapp-logline leapp-lv-" + r.level.toLowerCase(), "data-leapp-log-level": r.level,
                               "data-leapp-log-section": r.section || "" },
          h("span", { class: "leapp-lv" }, r.level), r.section ? h("span", { class: "leapp-sec" }, "[" + r.section + "]") : null, " ", r.message));
      }
      count.textContent = n + " of " + L.records.length + " records";
    }
    fillLog();
  }

  // ---- profile tab (verify)
  const profileDiv = h("div", { class: "leapp-profile" });
  if (panels.profile && view.profile) {
    const msel = h("select", { "data-leapp-profile-metric": "", on: { change: e => { state.profileMetric = e.target.value; drawProfile(profileDiv, view.profile, state.profileMetric, id => select(id, null, true)); } } },
      (view.profile.series || []).map(s => h("option", { value: s.key }, s.label)));
    panels.profile.append(h("div", { class: "leapp-toolbar" }, h("label", {}, "metric ", msel),
      h("span", { class: "leapp-muted" }, " error growth over outputs and taps in model order; dotted line = first divergent; click a point to select its row")), profileDiv);
  }

  // ---- bars tab (repair)
  const barsDiv = h("div", { class: "leapp-profile", "data-leapp-bars": "" });
  if (panels.bars && view.bars) {
    panels.bars.append(h("div", { class: "leapp-toolbar" }, h("span", { class: "leapp-muted" }, view.bars.caption || "")), barsDiv);
  }

  fillRows();
  showTab(state.tab);
  const first = table.first_divergent || (rows[0] && rows[0].id);
  if (first) select(first, null, false); else { renderHist(); renderNode(); }

  return {
    select: (id, sampleKey) => select(id, sampleKey, false),
    state,
  };
}

// -- the static companion --------------------------------------------------------------------------
// In a kernel, leapp_lab publishes the static view (data-leapp-static=ID) as its own output just before
// the widget, so a notebook reopened without the widget's model still shows it. While this live view
// is drawn, that output is taken off the page (one view, not two); it comes back if the view goes
// (kernel restart), as it would on reopening. It is looked for a few times: the live view is usually
// drawn before its output is attached.
function parkStatic(id) {
  let parked = null, tries = 0, timer = null, stopped = false;
  const find = () => {
    if (stopped) return;
    const st = [...document.querySelectorAll("[data-leapp-static]")].find(e => e.getAttribute("data-leapp-static") === id);
    if (st) {
      const box = st.closest(".jp-OutputArea-child");
      parked = { st, parent: st.parentNode, next: st.nextSibling, box };
      st.remove();
      if (box) box.style.display = "none";
    } else if (++tries < 40) timer = setTimeout(find, 100);
  };
  if (id) find();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    if (!parked) return;
    if (parked.parent) parked.parent.insertBefore(parked.st, parked.next && parked.next.parentNode === parked.parent ? parked.next : null);
    if (parked.box) parked.box.style.display = "";
  };
}

// -- anywidget host: the whole view arrives in one trait; the selection goes back in two ------------
export default {
  render({ model, el }) {
    let api = null;
    const unpark = parkStatic(model.get("_static_id") || "");
    const draw = () => {
      api = renderView(el, model.get("view"), {
        onSelect(id, sample) {
          model.set("selected", id); model.set("sample", sample == null ? "" : String(sample)); model.save_changes();
        },
      });
      // renderView opened on the first divergent row, which is also the trait's default
      const sel = model.get("selected"), sample = model.get("sample");
      if (sel && (sel !== api.state.row || sample)) api.select(sel, sample || null);
    };
    draw();
    const onView = () => draw();
    const onSel = () => { const id = model.get("selected"); if (api && api.select && id && id !== api.state.row) api.select(id, model.get("sample") || null); };
    model.on("change:view", onView);
    model.on("change:selected", onSel);
    return () => { model.off("change:view", onView); model.off("change:selected", onSel); unpark(); };
  },
};
