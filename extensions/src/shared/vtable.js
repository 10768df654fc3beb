// The virtual table: only the rows scrolled into view (and OVERSCAN more each side) exist as <tr>;
// spacers keep the height, so a table of 100k rows scrolls like one of 50. Columns have fixed widths
// from their content (columnWidth), pinned columns stay at the left. What is shown (items) and what
// happens on a click come from the owner (tabs/table.js).
//
// o: columns, rows, table (the view dict's table), nameKey, groupKey, state (hidden, sortKey, row),
//    cellTypes (column type -> fn(value, row, column, table) -> <td>), headerRow(cols) -> <tr>|null,
//    onRow(id), onGroup(group), onSort(column).
import { h } from "./dom.js";
import { fmt } from "./format.js";
import { ROW_H, columnWidth, displayColumns, scrollTargetFor, windowRange } from "./table.js";

const PAD = 13;     // px of padding + border per cell (leapp_view.css: .leapp-virtual td)
const cssWidth = (ch, n) => "calc(" + ch + "ch + " + (n * PAD) + "px)";

// Extra DOM hooks of a row, from the view dict (only data-leapp-* names are taken).
export function rowHooks(r) {
  const out = {};
  for (const [k, v] of Object.entries(r.attrs || {})) if (k.startsWith("data-leapp-") && v !== null && v !== undefined) out[k] = v;
  return out;
}

export function virtualTable(o) {
  const { columns, rows, table, nameKey, groupKey, state } = o;
  const colgroup = h("colgroup", {});
  const thead = h("thead", {});
  const tbody = h("tbody", {});
  const tableEl = h("table", { class: "leapp-table leapp-virtual" }, colgroup, thead, tbody);
  const wrap = h("div", { class: "leapp-tablewrap", tabindex: "0", on: { scroll: () => renderWindow(false) } }, tableEl);
  const rowEls = new Map();
  let items = [];            // what the table shows, in order: {r: row} or {group, n, nfail, collapsed}
  let lastRange = null;
  let pinLeft = {};
  const widths = new Map(columns.map(c => [c.key, columnWidth(c, rows, table, nameKey)]));
  const shownColumns = () => displayColumns(columns, state.hidden);

  function buildHead() {
    const cols = shownColumns();
    colgroup.replaceChildren(...cols.map(c => h("col", { style: "width:" + cssWidth(widths.get(c.key), 1) })));
    tableEl.style.width = cssWidth(cols.reduce((a, c) => a + widths.get(c.key), 0), cols.length);
    pinLeft = {};
    let ch = 0, k = 0;
    for (const c of cols) if (c.pinned) { pinLeft[c.key] = cssWidth(ch, k); ch += widths.get(c.key); k++; }
    const tr = h("tr", {});
    for (const c of cols) {
      tr.append(h("th", { "data-leapp-col": c.key, class: "leapp-" + c.type + (c.pinned ? " leapp-pin" : "") + (state.sortKey === c.key ? " leapp-sorted" : ""),
        style: c.pinned ? "left:" + pinLeft[c.key] : null, title: (c.description ? c.description + " · " : "") + "sort by " + c.label,
        on: { click: () => o.onSort(c) } }, c.label));
    }
    const groupRow = o.headerRow ? o.headerRow(cols) : null;      // columns that carry a `group` (compare views)
    thead.replaceChildren(...(groupRow ? [groupRow] : []), tr);
    pinsMeasured = measurePins();
  }

  // the pinned columns' left offsets, measured once the header is laid out (until then: computed)
  let pinsMeasured = false;
  function measurePins() {
    const ths = [...thead.querySelectorAll("th.leapp-pin")];
    if (!ths.length) return true;
    if (!ths[0].offsetWidth) return false;
    let x = 0;
    for (const th of ths) { pinLeft[th.dataset.leappCol] = x + "px"; th.style.left = x + "px"; x += th.offsetWidth; }
    return true;
  }

  function markSorted() {
    for (const th of thead.querySelectorAll("th")) th.classList.toggle("leapp-sorted", th.dataset.leappCol === state.sortKey);
  }

  function spacer(px, n) {
    return h("tr", { class: "leapp-spacer", "aria-hidden": "true" }, h("td", { colspan: n, style: "height:" + px + "px" }));
  }

  function rowEl(r, cols) {
    const tr = h("tr", { ...rowHooks(r), "data-leapp-row": r.id, "data-leapp-status": r.status, "data-leapp-tap-status": r.tap_status,
                         "data-leapp-first-divergent": r.first_divergent ? "true" : null,
                         "data-leapp-tone": r.tone || null,
                         class: "leapp-row leapp-" + r.status + (r.tone ? " leapp-tone-" + r.tone : "") + (r.first_divergent ? " leapp-first" : "") + (r.id === state.row ? " leapp-selected" : ""),
                         on: { click: () => o.onRow(r.id) } });
    for (const c of cols) {
      const v = r.cells[c.key];
      const pin = c.pinned ? { class: "leapp-pin", style: "left:" + pinLeft[c.key] } : {};
      if (o.cellTypes[c.type]) tr.append(o.cellTypes[c.type](v, r, c, table));
      else if (c.type === "status") {
        const label = (table.status_labels || {})[r.status] || r.status;
        const extra = r.tap_status && r.tap_status !== "compared" ? r.tap_status : null;
        tr.append(h("td", { class: "leapp-status" + (c.pinned ? " leapp-pin" : ""), style: pin.style, title: r.why || r.reason ? "why: " + (r.why || r.reason) : null },
          h("span", { class: "leapp-pill leapp-" + (r.tone || r.status) }, label),
          extra ? h("span", { class: "leapp-muted" }, " " + extra) : null,
          r.first_divergent ? h("span", { class: "leapp-firstmark", title: "first divergent row in model order" }, "◀ first") : null));
      } else if (c.key === nameKey) {
        tr.append(h("td", { class: "leapp-text leapp-name" + (c.pinned ? " leapp-pin" : ""), style: pin.style, title: r.sub ? r.id + " · " + r.sub : r.id },
          fmt(v, c.type), r.sub ? h("span", { class: "leapp-sub-name" }, " " + r.sub) : null));
      } else {
        const text = fmt(v, c.type);
        tr.append(h("td", { class: "leapp-" + c.type + (c.pinned ? " leapp-pin" : ""), style: pin.style,
                            title: typeof v === "number" ? String(v) : text.length > 12 ? text : null }, text));
      }
    }
    rowEls.set(r.id, tr);
    return tr;
  }

  function groupEl(it, n) {
    const tr = h("tr", { class: "leapp-grouprow", "data-leapp-group-row": it.group,
                         on: { click: () => o.onGroup(it.group) } },
      h("td", { colspan: n }, h("span", { class: "leapp-pin-inline" }, (it.collapsed ? "▸ " : "▾ ") + (it.group || "(no " + groupKey + ")"),
        h("span", { class: "leapp-muted" }, " · " + it.n + (it.n === 1 ? " row" : " rows") + (it.nfail ? " · " : "")),
        it.nfail ? h("span", { class: "leapp-firstmark" }, it.nfail + " " + ((table.status_labels || {}).fail || "fail")) : null)));
    return tr;
  }

  // force: redraw even when the same rows are in view; at: the scrollTop about to be set (the rows
  // drawn first make the table tall enough for it)
  function renderWindow(force, at) {
    if (!pinsMeasured) pinsMeasured = measurePins();
    const headH = thead.offsetHeight || ROW_H;
    const viewH = wrap.clientHeight || 480;
    const { top, first, last } = windowRange(at ?? wrap.scrollTop, viewH, headH, items.length);
    if (!force && lastRange && lastRange[0] === first && lastRange[1] === last) return;
    lastRange = [first, last];
    const cols = shownColumns();
    rowEls.clear();
    const out = [];
    if (first > 0) out.push(spacer(first * ROW_H, cols.length));
    for (let i = first; i < last; i++) out.push(items[i].r ? rowEl(items[i].r, cols) : groupEl(items[i], cols.length));
    if (last < items.length) out.push(spacer((items.length - last) * ROW_H, cols.length));
    if (!items.length) out.push(h("tr", {}, h("td", { colspan: cols.length, class: "leapp-empty" }, "no rows")));
    tbody.replaceChildren(...out);
    if (at !== undefined) { wrap.scrollTop = top; lastRange = [first, last]; }
  }

  function scrollToIndex(i, redraw) {
    if (i === undefined) return;
    const headH = thead.offsetHeight || ROW_H;
    const at = scrollTargetFor(i, wrap.scrollTop, wrap.clientHeight, headH);
    if (at !== null) renderWindow(true, at);
    else renderWindow(redraw !== false);
  }

  return {
    wrap, thead, rowEls, buildHead, renderWindow, scrollToIndex, markSorted, shownColumns,
    setItems(list) { items = list; },
    // the next draw redraws whatever rows are in view (another set of rows)
    invalidate() { lastRange = null; },
    count: () => items.length,
    // the selected row's class (rows drawn later take it from state.row)
    markSelected(id) { for (const [rid, tr] of rowEls) tr.classList.toggle("leapp-selected", rid === id); },
  };
}
