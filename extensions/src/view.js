// renderView: one view dict (leapp_lab/views/viewdict.py) drawn into one element. A small state
// object, the header, the tab bar and the tab renderers keyed by tab id (tabs.js); the selection,
// the permalink and the API are here, everything a tab draws is in its module.
//
// host: {onSelect(id, sample)}: the widget's callback for selections made in the page;
//       {permalink: true}: the offline report (URL fragment written on every selection, read on load);
//       {fill: true}: the table takes the window's height; {globalKeys: true}: n/p/j/k/arrows work
//       anywhere on the page, not only with the table focused.
// Returns the view's API (also on the root element as .leappView): select(id, sample, source),
// onSelect (a list: push fn(id, sample, source), called on every selection), scrollToRow(id),
// showTab(id), search(q), rowIds() (the rows shown, in their current order), fragment(), state.
import { h } from "./shared/dom.js";
import { findingEl } from "./shared/finding.js";
import { fmt } from "./shared/format.js";
import { fragmentOf, readFragment } from "./shared/permalink.js";
import { TABS } from "./tabs.js";

// What the user changed: the tab, the selected row and sample, the table's sort, filters, grouping,
// hidden columns and side panel, the node shown, the log's filters and the profile's metric.
const MIN_PANEL_H = 420;     // px: a notebook view's panels are at least this tall (holdHeight)

export function initialState(view) {
  const columns = (view.table && view.table.columns) || [];
  const series = (view.profile && view.profile.series) || [];
  return { tab: (view.tabs && view.tabs[0] && view.tabs[0].id) || "table", row: null, sample: null,
           sortKey: null, sortDir: 1, onlyBad: false, query: "", groupBy: false, collapsed: new Set(),
           hidden: new Set(columns.filter(c => c.hidden).map(c => c.key)), panelOpen: true,
           node: null, layersEngine: null, logLevel: 0, logSection: "",
           profileMetric: (view.profile && view.profile.default) || (series[0] ? series[0].key : null) };
}

// header; a badge that names a row (first divergent, worst, largest jump) is a button to it
function header(view, onBadge, onTab) {
  return h("div", { class: "leapp-head" },
    h("div", { class: "leapp-title" }, h("span", { class: "leapp-dot leapp-" + view.status }), view.title),
    view.subtitle ? h("div", { class: "leapp-subtitle" }, view.subtitle) : null,
    findingEl(view.finding, onBadge),
    h("div", { class: "leapp-badges" }, (view.badges || []).map(b => b.tab && onTab
      ? h("button", { class: "leapp-badge leapp-badge-link" + (b.status ? " leapp-" + b.status : ""), title: b.title,
                      "data-leapp-badge-tab": b.tab, on: { click: () => onTab(b.tab) } },
          h("b", {}, b.label), " ", fmt(b.value))
      : b.row
      ? h("button", { class: "leapp-badge leapp-badge-link" + (b.status ? " leapp-" + b.status : ""), title: b.title,
                      "data-leapp-badge-row": b.row, on: { click: () => onBadge(b.row) } },
          h("b", {}, b.label), " ", fmt(b.value))
      : h("span", { class: "leapp-badge" + (b.status ? " leapp-" + b.status : ""), title: b.title }, h("b", {}, b.label), " ", fmt(b.value)))),
    (view.notes || []).length ? h("ul", { class: "leapp-notes" }, view.notes.map(n => h("li", {}, n))) : null);
}

export function renderView(el, view, host) {
  host = host || {};
  el.replaceChildren();
  if (!view || !view.kind) { el.append(h("div", { class: "leapp-empty" }, "(empty leapp_lab view)")); return {}; }
  const table = view.table || { rows: [], columns: [] };
  const rows = table.rows || [];
  const byId = new Map(rows.map(r => [r.id, r]));
  const listeners = [];
  let booting = true;        // set-up: no fragment written, no callbacks for the opening selection
  const frag = host.permalink ? readFragment(view.kind) : null;
  const state = initialState(view);

  // data-lm-suppress-shortcuts: keys pressed in the view are the view's (JupyterLab would otherwise
  // take j/k/↑/↓ to move between notebook cells)
  const root = h("div", { class: "leapp-view" + (host.fill ? " leapp-fill" : ""), "data-leapp-kind": view.kind,
                          "data-leapp-status": view.status, "data-lm-suppress-shortcuts": "true" });
  el.append(root);
  const tabs = {};
  const ctx = { view, host, state, table, rows, columns: table.columns || [], byId, root, frag,
                select, showTab, openNode, openLayers, writeFragment, emit, refocus: () => tabs.table.refocus(),
                // a view drawn inside a tab (a trace node's Layers: its verify view), and the buttons
                // the tabs add to a row's side panel
                renderView, rowActions: r => Object.values(tabs).flatMap(t => (t.actions ? t.actions(r) : [])) };
  root.append(header(view, id => { select(id, null, "badge"); ctx.refocus(); }, id => showTab(id)));

  const tabBar = h("div", { class: "leapp-tabs", role: "tablist" });
  const panels = {};
  root.append(tabBar);
  for (const t of view.tabs || []) {
    tabBar.append(h("button", { class: "leapp-tab", "data-leapp-tab": t.id, role: "tab", on: { click: () => { showTab(t.id); if (t.id === "table") ctx.refocus(); } } }, t.label));
    panels[t.id] = h("div", { class: "leapp-panel", "data-leapp-panel": t.id });
    root.append(panels[t.id]);
  }
  for (const [id, render] of Object.entries(TABS)) {
    if (!panels[id] && id !== "table") continue;
    const t = render(ctx, panels[id]);
    if (t) tabs[id] = t;
  }
  const each = (hook, ...args) => { for (const t of Object.values(tabs)) if (t[hook]) t[hook](...args); };

  // In a notebook the view keeps one height whatever the tab, so the cells below never jump: every
  // panel is as tall as the tallest table panel seen (at least MIN_PANEL_H), and a taller tab scrolls
  // inside its panel. (The offline report's page scrolls instead: host.fill.)
  let panelH = 0;
  function holdHeight() {
    if (host.fill) return;
    const t = panels.table;
    if (t && t.style.display !== "none" && t.offsetHeight) panelH = Math.max(panelH, t.offsetHeight);
    const hgt = Math.max(panelH, MIN_PANEL_H);
    for (const [k, p] of Object.entries(panels)) {
      p.style.minHeight = hgt + "px";
      if (k !== "table") { p.style.height = hgt + "px"; p.style.overflow = "auto"; }
    }
  }

  function showTab(id) {
    if (!panels[id]) return;
    if (state.tab !== id) holdHeight();
    state.tab = id;
    for (const b of tabBar.children) b.classList.toggle("leapp-active", b.dataset.leappTab === id);
    for (const [k, p] of Object.entries(panels)) p.style.display = k === id ? "" : "none";
    if (tabs[id] && tabs[id].show) tabs[id].show();
    writeFragment();
  }

  function emit(id, sample, source) {
    for (const fn of listeners.slice()) { try { fn(id, sample, source); } catch (e) { console.error(e); } }
  }

  function select(id, sampleKey, source) {
    const r = byId.get(id);
    if (!r) return false;
    source = source || "api";
    state.row = id;
    state.sample = sampleKey ?? r.default_sample ?? (r.samples[0] && r.samples[0].key);
    if (r.node) state.node = r.node;
    const here = tabs[state.tab];
    // a row picked on a plot opens in the table; the opening selection and a link's row stay on their tab
    const toTable = !!panels.table && !!(here && here.handsToTable) && !["api", "init", "restore"].includes(source);
    tabs.table.select(r, source, toTable);
    if (toTable) showTab("table");
    for (const [tid, t] of Object.entries(tabs)) if (tid !== "table" && t.select) t.select(r, source);
    if (source !== "init" && source !== "restore") writeFragment();
    if (host.onSelect && source !== "api" && source !== "init" && source !== "restore") host.onSelect(id, state.sample);
    emit(id, state.sample, source);
    return true;
  }

  // a node's tab (a click on a graph node or a hazard)
  function openNode(name) {
    state.node = name;
    if (tabs.node) tabs.node.render();
    showTab("node");
  }

  // a node's Layers on one engine (the trace view's layers tab; views/layers.js)
  function openLayers(name, engine) {
    if (!tabs.layers) return;
    state.node = name;
    state.layersEngine = engine || null;
    showTab("layers");
  }

  // ---- permalink (offline report only; a notebook's URL is the notebook's)
  function fragment() { return fragmentOf(view.kind, state); }
  function writeFragment() {
    if (!host.permalink || booting || typeof history === "undefined") return;
    const hash = "#" + fragment();
    if (location.hash === hash) return;
    try { history.replaceState(null, "", hash); } catch (e) { location.replace(hash); }
  }
  if (host.permalink) window.addEventListener("hashchange", () => {
    const f = readFragment(view.kind);
    if (f) restore(f);
  });
  function restore(f) {
    if (f.q !== null && f.q !== undefined && f.q !== state.query) tabs.table.setQuery(f.q, "restore");
    if (f.tab && panels[f.tab] && f.tab !== state.tab) showTab(f.tab);
    if (f.row && byId.has(f.row) && (f.row !== state.row || (f.sample && f.sample !== state.sample))) select(f.row, f.sample || null, "restore");
    else if (f.row && !byId.has(f.row)) tabs.table.notice("the link's row “" + f.row + "” is not in this report");
  }

  // ---- start: the row in the link (offline report), else the first divergent row. A link's row
  // that is not in the report says so and keeps the link's search: the first row it shows opens.
  each("init");
  holdHeight();
  showTab(frag && frag.tab && panels[frag.tab] ? frag.tab : state.tab);
  const startRow = frag && frag.row && byId.has(frag.row) ? frag.row : null;
  const lost = frag && frag.row && !startRow ? frag.row : null;
  let first = startRow || (table.open && byId.has(table.open) ? table.open : null) || table.first_divergent || (rows[0] && rows[0].id);
  if (lost && state.query) {
    const shown = tabs.table.rowIds();
    first = shown.includes(first) ? first : shown[0] || null;
  }
  if (first) select(first, startRow ? frag.sample || null : null, startRow ? "restore" : "init"); else each("refresh");
  if (lost) tabs.table.notice("the link's row “" + lost + "” is not in this report" + (state.query ? "; its search is kept" : ""));
  booting = false;
  each("ready");

  const api = {
    state,
    select: (id, sampleKey, source) => select(id, sampleKey ?? null, source || "api"),
    onSelect: listeners,
    scrollToRow: id => tabs.table.reveal(id, "api"),
    showTab,
    search: q => tabs.table.setQuery(q || "", "api"),
    rowIds: () => tabs.table.rowIds(),
    fragment,
  };
  root.leappView = api;
  return api;
}
