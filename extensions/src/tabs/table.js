// The table tab of every view kind: toolbar (search, filter, group, jumps, sort, columns, CSV, link),
// the virtual table of rows (shared/vtable.js) and the side panel of the selected row
// (shared/histpanel.js; a compare view's own: views/compare.js). The table is the view's spine: it
// is built even when the view has no table tab (its rows then answer the API's rowIds and select).
import { download, h } from "../shared/dom.js";
import { drawRowPanel } from "../shared/histpanel.js";
import { enterTarget, explainQuery, searchText } from "../shared/search.js";
import { ROW_H, autoDepth, groupLevels, groupOf, nextSort, tableCsv, tableItems } from "../shared/table.js";
import { virtualTable } from "../shared/vtable.js";
import { CELL_TYPES, groupHeaderRow, renderGroupPanel } from "../views/compare.js";

export function tableTab(ctx, panel) {
  const { view, host, state, table, rows, columns, byId } = ctx;
  const groups = new Map();      // rows of one group (r.group): the side panel's picker picks among them
  for (const r of rows) if (r.group) { if (!groups.has(r.group)) groups.set(r.group, []); groups.get(r.group).push(r); }
  const nameKey = (columns.find(c => c.key === "name") || columns.find(c => c.type === "text") || {}).key;
  const groupKey = columns.some(c => c.key === "scope") ? "scope" : columns.some(c => c.key === "node") ? "node" : null;
  const hay = new Map(rows.map(r => [r.id, searchText(r, table)]));
  // "group by scope" groups at a depth that makes groups of several rows; the user can pick another
  const levels = groupKey ? groupLevels(rows, groupKey) : [];
  if (state.groupDepth === null || state.groupDepth === undefined) state.groupDepth = groupKey === "scope" ? autoDepth(levels, rows.length) : null;
  // what a row is called ("segment" in a repair view), and the verdict n / p jump to
  const noun = table.row_noun || "row";
  const nouns = n => n + " " + noun + (n === 1 ? "" : "s");
  const jumpStatus = table.jump_status || "fail";
  const jumpLabel = (table.jump_label || "divergent") + (noun === "row" ? "" : " " + noun);

  const vt = virtualTable({
    columns, rows, table, nameKey, groupKey, state, cellTypes: CELL_TYPES,
    headerRow: cols => groupHeaderRow(table, cols),
    onRow: id => ctx.select(id, null, "click"),
    onGroup: g => toggleGroup(g),
    onSort: c => { Object.assign(state, nextSort(state, c)); refresh(); refocus(); },
  });
  const { wrap, thead } = vt;
  // After a toolbar click, focus goes back to the table: the keys keep moving rows instead of
  // reaching the notebook, which would move between cells in command mode.
  const refocus = () => { if (wrap.isConnected) wrap.focus({ preventScroll: true }); };
  const histPanel = h("div", { class: "leapp-hist", "data-leapp-hist-row": "", "data-leapp-hist-sample": "" });
  const filterBox = h("input", { type: "checkbox", "data-leapp-filter": table.filter_id || "divergent", on: { change: e => { state.onlyBad = e.target.checked; refresh(); refocus(); } } });
  const search = h("input", { type: "search", class: "leapp-search", "data-leapp-search": "", spellcheck: "false",
    placeholder: "search: name, op, " + (groupKey ? groupKey + ":…, " : "") + "status:…, reason:…",
    title: "every term must match; key:value looks in one column (scope:layer.1 = that module and the ones inside it, " +
           "at any module boundary; status:diverged, reason:non-finite, kind:op, hazard:trace-loss; any column's key); " +
           "Enter opens the row named exactly so, else the first match",
    on: { input: e => setQuery(e.target.value, "search"), keydown: onSearchKey } });
  const count = h("span", { class: "leapp-muted", "data-leapp-count": "" });
  const searchNote = h("span", { class: "leapp-msg leapp-search-note", "data-leapp-search-note": "", role: "status" });
  const msgEl = h("span", { class: "leapp-msg", "data-leapp-msg": "" });
  const sortInfo = h("span", { class: "leapp-sortinfo" }, "model order");
  const groupBox = groupKey ? h("input", { type: "checkbox", "data-leapp-group": groupKey, on: { change: e => { state.groupBy = e.target.checked; refresh(); refocus(); } } }) : null;
  const depthSel = levels.length > 1 ? h("select", { "data-leapp-group-depth": "", title: "how deep in the module scope the groups are",
    on: { change: e => { state.groupDepth = Number(e.target.value); state.collapsed.clear(); state.groupBy = true; groupBox.checked = true; refresh(); refocus(); } } },
    levels.map(l => h("option", { value: String(l.depth), selected: l.depth === state.groupDepth }, "depth " + l.depth + " · " + l.groups + " group" + (l.groups === 1 ? "" : "s")))) : null;
  const panelBtn = h("button", { class: "leapp-btn", "data-leapp-panel-toggle": "", title: "show or hide the side panel (histogram and metrics)",
                                 on: { click: () => { togglePanel(); refocus(); } } }, "hide panel ▸");
  const linkBox = h("input", { type: "text", class: "leapp-linkbox", readonly: true, "data-leapp-link": "", style: "display:none" });
  const colMenu = h("details", { class: "leapp-colmenu" }, h("summary", { class: "leapp-btn" }, "columns"),
    h("div", { class: "leapp-colmenu-list" }, columns.filter(c => c.key !== nameKey).map(c =>
      h("label", { title: c.description || null }, h("input", { type: "checkbox", "data-leapp-col-toggle": c.key, checked: !state.hidden.has(c.key),
        on: { change: e => { if (e.target.checked) state.hidden.delete(c.key); else state.hidden.add(c.key); vt.buildHead(); vt.renderWindow(true); } } }), " " + c.label))));
  if (panel) {
    // the DOM's own append writes null as the text "null": leave out what this table lacks
    panel.append(...[
      h("div", { class: "leapp-toolbar" }, h("span", { class: "leapp-ttitle" }, table.title || "")),
      h("div", { class: "leapp-toolbar" },
        search, count, searchNote,
        h("label", {}, filterBox, " " + (table.filter_label || "divergent only")),
        groupBox ? h("label", { title: "rows under one header per " + groupKey + " (click a header to fold it)" }, groupBox, " group by " + groupKey) : null,
        depthSel,
        h("button", { class: "leapp-btn", "data-leapp-prev-divergent": "", title: "previous " + jumpLabel + " (p or k)", on: { click: () => { jumpDivergent(-1, "key"); refocus(); } } }, "▲ prev " + jumpLabel),
        h("button", { class: "leapp-btn", "data-leapp-next-divergent": "", title: "next " + jumpLabel + " (n or j)", on: { click: () => { jumpDivergent(1, "key"); refocus(); } } }, "▼ next " + jumpLabel),
        sortInfo, h("button", { class: "leapp-btn", "data-leapp-sort-reset": "", on: { click: () => { state.sortKey = null; refresh(); refocus(); } } }, "back to model order"),
        colMenu,
        h("button", { class: "leapp-btn", "data-leapp-download-csv": "", title: "the table as shown (filtered, sorted, shown columns), full precision",
                      on: { click: () => downloadCsv() } }, "download CSV"),
        host.permalink ? h("button", { class: "leapp-btn", "data-leapp-copy-link": "", title: "a link to this view, tab, row and sample",
                                       on: { click: () => copyLink() } }, "copy link") : null,
        panelBtn, msgEl),
      linkBox,
      table.rule ? h("div", { class: "leapp-rule" }, table.rule) : null,
      h("div", { class: "leapp-split" }, h("div", { class: "leapp-left" }, wrap), histPanel)].filter(Boolean));
  }

  let items = [];            // what the table shows, in order: {r: row} or {group, n, nfail, collapsed}
  let shownRows = [];        // the rows that pass the filters, in display order (folded groups included)
  let indexOf = new Map();   // row id -> index in items

  function computeItems() {
    ({ items, shownRows, indexOf } = tableItems(rows, columns, table, state, hay, groupKey));
    vt.setItems(items);
    count.textContent = shownRows.length === rows.length ? nouns(rows.length) : shownRows.length + " of " + nouns(rows.length);
    // a search that shows nothing says why (an unknown key, a value no row has, ...)
    searchNote.textContent = state.query && !shownRows.length
      ? explainQuery(rows, state.query, table, hay, 0, state.onlyBad ? table.filter_label || "divergent only" : null) : "";
    const col = columns.find(c => c.key === state.sortKey);
    sortInfo.textContent = col ? "sorted by " + col.label + (state.sortDir > 0 ? " ↑" : " ↓") : "model order";
    vt.markSorted();
  }

  // keepPlace: a group folded or unfolded; otherwise another set of rows, which starts at its top
  // unless the selected row is in it
  function refresh(keepPlace) {
    computeItems();
    vt.invalidate();
    fitHeight();
    if (state.row && indexOf.has(state.row) && !keepPlace) vt.scrollToIndex(indexOf.get(state.row));
    else { if (!keepPlace) wrap.scrollTop = 0; vt.renderWindow(true); }
  }

  function setQuery(q, source) {
    state.query = q;
    if (search.value !== q) search.value = q;
    msg("");
    refresh();
    ctx.writeFragment();
  }

  function onSearchKey(e) {
    e.stopPropagation();               // typing is not a command
    if (e.key === "Enter" && shownRows.length) { e.preventDefault(); ctx.select(enterTarget(shownRows, state.query, nameKey).id, null, "search"); refocus(); }
    if (e.key === "Escape") { setQuery("", "search"); refocus(); }
  }

  function toggleGroup(g) {
    const opening = state.collapsed.delete(g);
    if (!opening) state.collapsed.add(g);
    refresh(true);
    const r = byId.get(state.row);
    if (opening && r && groupOf(r.cells[groupKey], groupKey, state.groupDepth) === g) vt.scrollToIndex(indexOf.get(r.id));   // the selection is back
  }

  // Bring a row into the table: unfold its group, and if the filters hide it, clear them (the user
  // asked for that row), then scroll it into view.
  function reveal(id, source) {
    const r = byId.get(id);
    if (!r) return;
    let changed = false;
    if (!indexOf.has(id) && state.groupBy && state.collapsed.delete(groupOf(r.cells[groupKey], groupKey, state.groupDepth))) { computeItems(); changed = true; }
    if (!indexOf.has(id) && source !== "search") {
      state.query = ""; search.value = ""; state.onlyBad = false; filterBox.checked = false;
      computeItems();
      msg("filters cleared to show " + id);
      changed = true;
    }
    // a row already drawn only changes its class (select does that): no redraw of the window
    vt.scrollToIndex(indexOf.get(id), changed || !vt.rowEls.has(id));
  }

  function fitHeight() {
    if (!wrap.isConnected) return;
    const want = items.length * ROW_H + (thead.offsetHeight || ROW_H) + 4;
    let avail;
    if (host.fill) {
      const top = wrap.getBoundingClientRect().top + (window.scrollY || 0);
      avail = Math.max(280, window.innerHeight - top - 16);
    } else {
      avail = Math.max(280, Math.min(window.innerHeight * 0.72, 720));
    }
    const px = Math.min(avail, Math.max(want, 3 * ROW_H));
    wrap.style.height = px + "px";
    histPanel.style.maxHeight = Math.max(px, 560) + "px";
  }

  function msg(text) { msgEl.textContent = text || ""; }

  function togglePanel(open) {
    state.panelOpen = open === undefined ? !state.panelOpen : open;
    histPanel.style.display = state.panelOpen ? "" : "none";
    panelBtn.textContent = state.panelOpen ? "hide panel ▸" : "◂ show panel";
    if (state.panelOpen && state.row) renderHist();
    vt.renderWindow(true);
  }

  function moveRow(dir) {
    const ids = items.filter(it => it.r).map(it => it.r.id);
    if (!ids.length) return;
    const i = ids.indexOf(state.row);
    const j = i < 0 ? 0 : Math.min(ids.length - 1, Math.max(0, i + dir));
    ctx.select(ids[j], null, "key");
  }

  function jumpDivergent(dir, source) {
    const list = shownRows;
    if (!list.length) return;
    let i = list.findIndex(r => r.id === state.row);
    if (i < 0) i = dir > 0 ? -1 : list.length;
    for (let j = i + dir; j >= 0 && j < list.length; j += dir) {
      if (list[j].status === jumpStatus) { msg(""); ctx.select(list[j].id, null, source); return; }
    }
    msg("no " + jumpLabel + (noun === "row" ? " row" : "") + (dir > 0 ? " below" : " above"));
  }

  function onKey(e) {
    const t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
    if (state.tab !== "table" || e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key;
    if (k === "ArrowDown" || k === "ArrowUp") moveRow(k === "ArrowDown" ? 1 : -1);
    else if (k === "n" || k === "j") jumpDivergent(1, "key");
    else if (k === "p" || k === "k") jumpDivergent(-1, "key");
    else if (k === "/") { search.focus(); }
    else return;
    e.preventDefault();
    e.stopPropagation();
  }
  ctx.root.addEventListener("keydown", onKey);
  if (host.globalKeys) document.addEventListener("keydown", e => { if (e.target === document.body) onKey(e); });

  function downloadCsv() {
    download((view.kind || "leapp") + "-table.csv", tableCsv(vt.shownColumns(), shownRows), "text/csv");
    msg("CSV: " + nouns(shownRows.length));
  }

  function copyLink() {
    ctx.writeFragment();
    const url = location.href;
    linkBox.value = url;
    linkBox.style.display = "";
    linkBox.select();
    const done = ok => msg(ok ? "link copied" : "copy the link from the box");
    try { navigator.clipboard.writeText(url).then(() => done(true), () => done(false)); } catch (e) { done(false); }
  }

  const histPlot = h("div", { class: "leapp-histplot" });
  function renderHist() {
    if (!state.panelOpen) return;
    histPanel.replaceChildren();
    const r = byId.get(state.row);
    if (!r) { histPanel.append(h("div", { class: "leapp-empty" }, "click a row to see its |diff| histogram")); return; }
    if (table.groups) {        // a compare view: every run side by side (views/compare.js)
      renderGroupPanel(histPanel, r, state, table, key => { state.sample = key; renderHist(); if (host.onSelect) host.onSelect(r.id, key); });
      return;
    }
    drawRowPanel(histPanel, histPlot, r, state.sample, r.group ? groups.get(r.group) : null, view, table, {
      row: id => ctx.select(id, null, "picker"),
      actions: ctx.rowActions,
      sample: key => {
        state.sample = key; renderHist(); ctx.writeFragment(); if (host.onSelect) host.onSelect(r.id, state.sample);
        ctx.emit(r.id, state.sample, "picker");
      },
    });
  }

  return {
    refocus, setQuery, reveal, renderHist, notice: msg,
    rowIds: () => shownRows.map(r => r.id),
    // before the first tab is shown: the link's query, the header, the rows
    init() {
      if (ctx.frag && ctx.frag.q) { state.query = ctx.frag.q; search.value = ctx.frag.q; }
      vt.buildHead();
      computeItems();
    },
    show() {
      fitHeight();
      if (state.row && indexOf.has(state.row)) vt.scrollToIndex(indexOf.get(state.row)); else vt.renderWindow(true);
      if (state.row) renderHist();
    },
    // a row was selected: bring it into view and mark it; its panel unless the table is about to be
    // shown (show() draws it then)
    select(r, source, toTable) {
      msg("");
      reveal(r.id, source);
      vt.markSelected(r.id);
      if (!toTable) renderHist();
    },
    refresh: renderHist,
    // after the opening selection: the table's height and its drawn rows follow the space it gets
    // (a notebook attaches the view after it is drawn; windows and output areas resize)
    ready() {
      if (typeof ResizeObserver !== "undefined") {
        let lastW = 0, lastH = 0;
        new ResizeObserver(() => {
          const w = wrap.clientWidth, hh = wrap.clientHeight;
          if (w === lastW && hh === lastH) return;
          const fresh = lastH === 0;
          lastW = w; lastH = hh;
          if (fresh) { fitHeight(); if (state.row && indexOf.has(state.row)) vt.scrollToIndex(indexOf.get(state.row)); }
          vt.renderWindow(true);
        }).observe(wrap);
      }
      if (typeof window !== "undefined") window.addEventListener("resize", () => { fitHeight(); vt.renderWindow(true); });
    },
  };
}
