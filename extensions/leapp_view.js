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
//   Compare views: tr[data-leapp-flip][data-leapp-first-divergent-in][data-leapp-missing-in],
//   td[data-leapp-side][data-leapp-verdict], th[data-leapp-group], [data-leapp-hist-group] in the panel.

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
    if (kind === "cos" && Math.abs(v) < 2) {
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

// -- compare views (several verify runs side by side) -----------------------------------------------
// Data-driven and self-contained: a table whose columns carry `group` gets a grouped header row; cell
// types "verdict" (a run's verdict) and "flip" draw through CELL_TYPES; rows may carry extra
// data-leapp-* hooks in `attrs`; the selected row's panel shows every run (renderGroupPanel).

// Extra DOM hooks of a row, from the view dict (only data-leapp-* names are taken).
function rowHooks(r) {
  const out = {};
  for (const [k, v] of Object.entries(r.attrs || {})) if (k.startsWith("data-leapp-") && v !== null && v !== undefined) out[k] = v;
  return out;
}

// A header row above the column labels: one cell per run of consecutive columns with the same group.
function groupHeaderRow(table) {
  const cols = table.columns || [];
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

const CELL_TYPES = { verdict: verdictCell, flip: flipCell };

// The side panel of a compare row: the sample picker, every run's |diff| histogram (one bin range for
// all, so the plots line up) and the metrics of every run side by side (with the change against the
// baseline for the aggregate).
function renderGroupPanel(panel, r, state, table, onSample) {
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
      draws.push(() => drawHist(plot, d.hist, (table.hist_title || "|diff|") + " · " + r.id + " · " + g.label + " · " + s.label));
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
    if (id === "table" && state.row) renderHist();
    if (deepHooks[id]) deepHooks[id]();
  }
  const deepHooks = renderDeep(view, panels);

  // ---- table + histogram panel
  const tbody = h("tbody", {});
  const thead = h("thead", {});
  const tableEl = h("table", { class: "leapp-table" }, thead, tbody);
  // After a toolbar click, focus goes back to the table: ↑/↓ keep moving rows instead of reaching the
  // notebook, which would move between cells in command mode.
  const refocus = () => { if (wrap.isConnected) wrap.focus({ preventScroll: true }); };
  const filterBox = h("input", { type: "checkbox", "data-leapp-filter": table.filter_id || "divergent", on: { change: e => { state.onlyBad = e.target.checked; fillRows(); refocus(); } } });
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
  const groupRow = groupHeaderRow(table);      // columns that carry a `group` (compare views)
  if (groupRow) thead.append(groupRow);
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
    // table.filter_key: the filter keeps rows where that key is set (compare: "flip"); else failing rows
    let rs = rows.filter(r => !state.onlyBad || (table.filter_key ? !!r[table.filter_key] : r.status === "fail"));
    if (state.sortKey) rs = rs.slice().sort(cmp);
    return rs;
  }
  function fillRows() {
    tbody.replaceChildren(); rowEls.clear();
    const col = (table.columns || []).find(c => c.key === state.sortKey);
    sortInfo.textContent = col ? "sorted by " + col.label + (state.sortDir > 0 ? " ↑" : " ↓") : "model order";
    for (const th of headRow.children) th.classList.toggle("leapp-sorted", th.dataset.leappCol === state.sortKey);
    for (const r of visibleRows()) {
      const tr = h("tr", { ...rowHooks(r), "data-leapp-row": r.id, "data-leapp-status": r.status, "data-leapp-tap-status": r.tap_status,
                           "data-leapp-first-divergent": r.first_divergent ? "true" : null,
                           class: "leapp-row leapp-" + r.status + (r.first_divergent ? " leapp-first" : ""),
                           on: { click: () => select(r.id, null, true) } });
      for (const c of table.columns || []) {
        const v = r.cells[c.key];
        if (CELL_TYPES[c.type]) tr.append(CELL_TYPES[c.type](v, r, c, table));
        else if (c.type === "status") {
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
    if (state.tab !== "table" && fromUser && panels.table && state.tab === "profile") showTab("table");
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
    if (table.groups) {        // a compare view: every run side by side (compare section below)
      renderGroupPanel(histPanel, r, state, table, key => { state.sample = key; renderHist(); if (host.onSelect) host.onSelect(r.id, key); });
      return;
    }
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
    drawHist(histPlot, s && s.hist, (table.hist_title || "|diff|") + " · " + r.id + " · " + (s ? s.label : ""));
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

// == deep checks: replay, parity, adapters, exporters, isolation (docs/deep-checks.md) ===============
// Self-contained: renderView calls renderDeep(view, panels) once and calls the hook of a deep tab when
// it is shown (plotly sizes a plot only once it is visible). view.deep[section] holds one entry per
// graph (leapp_lab/views/deep_view.py). Hooks: tr[data-leapp-row][data-leapp-section][data-leapp-status],
// [data-leapp-deep-status] on each entry head, select[data-leapp-replay-run], [data-leapp-replay-plot],
// td[data-leapp-exporter][data-leapp-outcome], [data-leapp-advice], [data-leapp-decision],
// tr[data-leapp-decision-row][data-leapp-matched].

// plotly draws names and hover text as its own small HTML: user strings go in as entities
function plotText(s) {
  return String(s).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

const DEEP_COLUMNS = {
  replay: [["step", "step", "int"], ["output", "output", "text"], ["status", "status", "status"], ["max_abs", "max |diff|", "num"],
           ["nrmse", "nrmse", "num"], ["ref_max", "max |ref|", "num"], ["reset", "episode", "text"], ["note", "note", "text"]],
  parity: [["output", "output", "text"], ["sample", "fresh input", "int"], ["status", "status", "status"], ["max", "max", "num"],
           ["p99", "p99", "num"], ["mean", "mean", "num"], ["min_atol", "min atol", "num"], ["range", "original range", "text"]],
  adapters: [["function", "function", "text"], ["case", "case", "text"], ["status", "status", "status"], ["max_abs", "max |diff|", "num"],
             ["shapes", "shapes adapter / original", "text"], ["dtypes", "dtypes adapter / original", "text"], ["error", "error", "text"]],
  exporters: [["node", "node", "text"], ["backend", "backend", "text"], ["status", "outcome", "status"], ["verdict", "verdict", "text"],
              ["max_diff", "max |diff|", "num"], ["failed_samples", "failed samples", "int"], ["time_s", "time s", "num"], ["error", "error", "text"]],
  isolation: [["run", "run", "text"], ["options", "options", "text"], ["status", "verdict", "status"], ["failing", "failing samples", "int"],
              ["fx_mismatch", "FX ≠ recorded", "int"], ["same_trace", "same trace", "text"], ["hazards", "hazards", "text"], ["note", "note", "text"]],
};

function deepTable(section, rows, onPick, labelOf) {
  const cols = DEEP_COLUMNS[section];
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

function drawReplay(div, run, onPick) {
  clearPlot(div);
  if (typeof globalThis.Plotly === "undefined") { div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded")); return; }
  const color = st => st === "fail" ? "#c62828" : st === "pass" ? "#2e7d32" : "#9e9e9e";
  const data = run.series.map(s => ({
    type: "scatter", mode: "lines+markers", name: plotText(s.output), x: s.x, y: s.y,
    customdata: s.x.map(k => run.key + "/" + k + "/" + s.output),
    marker: { color: s.status.map(color), size: 8 }, line: { width: 1.5 },
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
    const picker = h("select", { "data-leapp-replay-run": e.graph }, e.runs.map(r => h("option", { value: r.key }, "tier (" + r.tier + ") · " + r.status)));
    const info = h("div", { class: "leapp-deepinfo" });
    const plot = h("div", { class: "leapp-replayplot", "data-leapp-replay-plot": "" });
    const box = h("div", {});
    panel.append(h("div", { class: "leapp-toolbar" }, h("label", {}, "sequence ", picker),
      h("span", { class: "leapp-muted" }, " click a point to find its row")), info, plot, box);
    const show = () => {
      const run = e.runs.find(r => r.key === picker.value) || e.runs[0];
      plot.setAttribute("data-leapp-replay-plot", run.key);
      info.replaceChildren(h("div", { class: "leapp-sub" }, run.title),
        kv([["status", run.status], ["steps", run.steps], run.seed !== null && run.seed !== undefined ? ["seed", run.seed] : null,
            ["episode resets at", run.resets.length ? run.resets.join(", ") : "–"],
            run.first_divergent ? ["first divergent", "step " + run.first_divergent.step + " · " + run.first_divergent.output] : null,
            ...run.breaks.map(([k, ks]) => ["fed back by Python, not the graph", k + " at " + ks.join(", ")]),
            run.reason ? ["reason", run.reason] : null]),
        run.notes.length ? h("ul", { class: "leapp-notes" }, run.notes.map(n => h("li", {}, n))) : null,
        h("table", { class: "leapp-kv", "data-leapp-replay-outputs": run.key },
          h("thead", {}, h("tr", {}, ["output", "first", "last", "max", "at step", "first failing step", "grows"].map(x => h("th", {}, x)))),
          h("tbody", {}, run.outputs.map(o => h("tr", {}, h("td", {}, o.output), h("td", {}, fmt(o.first)), h("td", {}, fmt(o.last)),
            h("td", {}, fmt(o.max)), h("td", {}, fmt(o.max_step)), h("td", {}, fmt(o.first_fail)), h("td", {}, o.grows ? "yes" : "no"))))));
      box.replaceChildren(deepTable("replay", run.rows, id => selectIn(box, id)));
      drawReplay(plot, run, id => selectIn(box, id));
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
        h("tbody", {}, e.outputs.map(o => h("tr", {}, h("td", {}, o.output), h("td", {}, o.failed + "/" + o.samples), h("td", {}, fmt(o.max)),
          h("td", {}, fmt(o.worst_sample)), h("td", {}, fmt(o.min_atol)))))));
    const box = h("div", {});
    box.append(deepTable("parity", e.rows, id => selectIn(box, id)));
    panel.append(box);
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
    box.append(deepTable("adapters", e.rows, id => selectIn(box, id)));
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
    box.append(deepTable("exporters", e.rows, id => selectIn(box, id), r => r.outcome));
    panel.append(box);
  }
}

function renderIsolationPanel(panel, entries, many) {
  for (const e of entries) {
    panel.append(deepHead("isolation", e, many, "the body traced again with parts of LEAPP turned off (it ran again " + e.reruns + "×)"));
    if (e.decision) panel.append(h("div", { class: "leapp-decision", "data-leapp-decision": e.decision },
      h("b", {}, "decision: " + e.decision), " (row " + fmt(e.rule) + ") · ", e.explanation || ""));
    const box = h("div", {});
    box.append(deepTable("isolation", e.rows, id => selectIn(box, id), r => r.cells.verdict || (r.cells.status === "not run" ? "not run" : r.status)));
    panel.append(box, h("div", { class: "leapp-sub" }, "decision table (the first matching row decides)"),
      h("table", { class: "leapp-kv leapp-decisiontable" }, h("thead", {}, h("tr", {}, ["row", "outcome pattern", "decision"].map(x => h("th", {}, x)))),
        h("tbody", {}, e.table.map(t => h("tr", { "data-leapp-decision-row": t.row, "data-leapp-matched": t.matched ? "true" : null, class: t.matched ? "leapp-matched" : null },
          h("td", {}, t.row), h("td", {}, t.pattern), h("td", {}, t.decision))))));
  }
}

export function renderDeep(view, panels) {
  const deep = view.deep || {};
  const many = (view.graphs || []).length > 1;
  const hooks = {};
  const draw = { replay: renderReplayPanel, parity: renderParityPanel, adapters: renderAdaptersPanel,
                 exporters: renderExportersPanel, isolation: renderIsolationPanel };
  for (const [name, fn] of Object.entries(draw)) {
    if (!panels[name] || !deep[name]) continue;
    const onShow = fn(panels[name], deep[name], many);
    if (onShow) hooks[name] = onShow;
  }
  return hooks;
}
// == end of deep checks ==============================================================================
