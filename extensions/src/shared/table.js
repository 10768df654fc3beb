// The table's pure parts (no DOM; extensions/test/table.test.js): which rows are shown and in what
// order, which of them are drawn (the virtual window), column widths, sorting and the CSV export.
import { fmt } from "./format.js";
import { matchTerm, parseQuery } from "./search.js";

export const STATUS_ORDER = { fail: 0, uncompared: 1, pass: 2 };
export const NUMERIC = new Set(["num", "int", "cos", "x"]);
export const ROW_H = 24;          // px: every table row has this height (virtual scrolling relies on it)
export const OVERSCAN = 12;       // rows drawn above and below the visible ones

// The rows drawn for a scroll position: [first, last) of n items of ROW_H px, OVERSCAN more each
// side. ``top`` is clamped to the last full page (scrollTop can still be past the end of a list that
// just got shorter); the clamped value comes back too.
export function windowRange(scrollTop, viewH, headH, n) {
  const top = Math.min(scrollTop, Math.max(0, n * ROW_H - (viewH - headH)));
  const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
  const last = Math.min(n, Math.ceil((top + viewH - headH) / ROW_H) + OVERSCAN);
  return { top, first, last };
}

// The scrollTop that brings item i into view (centred), or null when it is in view already.
export function scrollTargetFor(i, scrollTop, viewH, headH) {
  const y = i * ROW_H;
  if (viewH && (y < scrollTop || y + ROW_H > scrollTop + viewH - headH)) return Math.max(0, y - (viewH - headH) / 2 + ROW_H / 2);
  return null;
}

// The columns drawn, pinned ones first (each side in the view dict's order).
export function displayColumns(columns, hidden) {
  const vis = columns.filter(c => !hidden.has(c.key));
  return [...vis.filter(c => c.pinned), ...vis.filter(c => !c.pinned)];
}

// Column width from its content (in ch): the table lays out fixed, so rows drawn while scrolling
// never shift the columns.
const WIDTH_CAP = { text: 40, status: 26 };
export function columnWidth(c, rows, table, nameKey) {
  let w = c.label.length + 2;
  if (c.type === "status") {
    const labels = table.status_labels || {};
    for (const r of rows) w = Math.max(w, String(labels[r.status] || r.status).length + (r.tap_status && r.tap_status !== "compared" ? r.tap_status.length + 1 : 0) + (r.first_divergent ? 8 : 0));
  } else if (c.type === "verdict") {
    // a compare run's verdict cell: its label, its exact status beside it, the "◀ first" mark
    const labels = table.status_labels || {};
    for (const r of rows) {
      const side = (r.sides || {})[c.group] || {};
      const extra = side.tap_status && !["compared", "absent"].includes(side.tap_status) ? side.tap_status.length + 1 : 0;
      w = Math.max(w, String(labels[r.cells[c.key]] || r.cells[c.key] || "–").length + extra + (side.first_divergent ? 8 : 0));
    }
    return Math.min(w, WIDTH_CAP.status) + 2;
  } else if (c.type === "int") {
    for (const r of rows) { const v = r.cells[c.key]; if (v !== null && v !== undefined) w = Math.max(w, String(v).length + 1); }
  } else if (NUMERIC.has(c.type)) {
    w = Math.max(w, 10);
  } else {
    for (const r of rows) {
      const v = r.cells[c.key];
      let len = v === null || v === undefined ? 1 : fmt(v, c.type).length;
      if (c.key === nameKey && r.sub) len += r.sub.length + 2;
      if (len > w) w = len;
    }
  }
  return Math.min(w, WIDTH_CAP[c.type] || 14) + 1;
}

// The order of two rows by one column: missing values last whatever the direction; a status column
// sorts by verdict (fail, uncompared, pass).
export function compareRows(a, b, key, dir, columns) {
  const col = columns.find(c => c.key === key);
  let x = a.cells[key], y = b.cells[key];
  if (col && col.type === "status") { x = STATUS_ORDER[a.status] ?? 9; y = STATUS_ORDER[b.status] ?? 9; }
  if (x === null || x === undefined) return (y === null || y === undefined) ? 0 : 1;
  if (y === null || y === undefined) return -1;
  return (x < y ? -1 : x > y ? 1 : 0) * dir;
}

// A header click: the same column flips the direction; a new one starts descending for measures
// (the worst first), ascending for names and counts.
export function nextSort(state, col) {
  if (state.sortKey === col.key) return { sortKey: col.key, sortDir: -state.sortDir };
  return { sortKey: col.key, sortDir: NUMERIC.has(col.type) && col.type !== "int" ? -1 : 1 };
}

// What the table shows, in order: items ({r: row} or {group, n, nfail, collapsed}), the rows that
// pass the filters in display order (folded groups included) and row id -> index in items.
// state: query, onlyBad, sortKey, sortDir, groupBy, groupDepth (scopes: groupOf), collapsed;
// hay: row id -> searchText.
export function tableItems(rows, columns, table, state, hay, groupKey) {
  const terms = parseQuery(state.query);
  // table.filter_key: the filter keeps rows where that key is set (compare: "flip"); else failing rows
  const bad = r => table.filter_key ? !!r[table.filter_key] : r.status === "fail";
  let rs = rows.filter(r => (!state.onlyBad || bad(r)) && terms.every(t => matchTerm(r, hay.get(r.id), t, table)));
  if (state.sortKey) rs = rs.slice().sort((a, b) => compareRows(a, b, state.sortKey, state.sortDir, columns));   // stable: ties keep model order
  let items, shownRows;
  if (state.groupBy && groupKey) {
    const order = [], by = new Map();
    for (const r of rs) {
      const g = groupOf(r.cells[groupKey], groupKey, state.groupDepth);
      if (!by.has(g)) { by.set(g, []); order.push(g); }
      by.get(g).push(r);
    }
    items = []; shownRows = [];
    for (const g of order) {
      const members = by.get(g), collapsed = state.collapsed.has(g);
      items.push({ group: g, n: members.length, nfail: members.filter(r => r.status === "fail").length, collapsed });
      for (const r of members) { shownRows.push(r); if (!collapsed) items.push({ r }); }
    }
  } else {
    shownRows = rs;
    items = rs.map(r => ({ r }));
  }
  const indexOf = new Map();
  items.forEach((it, i) => { if (it.r) indexOf.set(it.r.id, i); });
  return { items, shownRows, indexOf };
}

// The group of a row under "group by": its cell, or for a scope the module at `depth` (1: the
// scope's first part, "m.layer.1.conv" -> "m"; 3 -> "m.layer.1"); "" when it has none.
export function groupOf(value, key, depth) {
  if (value === null || value === undefined) return "";
  if (key !== "scope" || !depth) return String(value);
  return String(value).split(".").slice(0, depth).join(".");
}

// What grouping the rows by `key` at each depth gives: [{depth, groups, several}] for depth 1 to
// the deepest scope (one entry for a key that is no scope); several: the rows in groups of two or more.
export function groupLevels(rows, key) {
  const deepest = key === "scope" ? Math.max(1, ...rows.map(r => r.cells[key] ? String(r.cells[key]).split(".").length : 1)) : 1;
  const out = [];
  for (let d = 1; d <= deepest; d++) {
    const size = new Map();
    for (const r of rows) { const g = groupOf(r.cells[key], key, key === "scope" ? d : null); size.set(g, (size.get(g) || 0) + 1); }
    let several = 0;
    for (const n of size.values()) if (n > 1) several += n;
    out.push({ depth: d, groups: size.size, several });
  }
  return out;
}

// The depth "group by scope" opens at: the deepest one that still puts two thirds of the rows in
// groups of several rows (a deeper one that only repeats a shallower grouping is not deeper), so
// groups are as fine as they can be without becoming one per row; depth 1 when none does.
export function autoDepth(levels, nRows) {
  let best = levels[0] || { depth: 1, groups: 0 };
  for (const l of levels) {
    if (l.several * 3 >= nRows * 2 && l.groups > best.groups) best = l;
  }
  return best.depth;
}

function csvCell(v) {
  if (v === null || v === undefined) return "";
  const s = Array.isArray(v) ? "[" + v.join(", ") + "]" : String(v);
  return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}

// The current table (filtered, sorted, shown columns) as CSV: one header line of column keys (as
// in metrics.csv), the values at full precision (not the 4 digits on screen), empty for none, then
// verdict and reason unless a shown column already has that key (one header, one column each).
export function tableCsv(columns, rows) {
  const keys = new Set(columns.map(c => c.key));
  const extra = [["verdict", r => r.status], ["reason", r => r.reason]].filter(([k]) => !keys.has(k));
  const lines = [columns.map(c => csvCell(c.key)).concat(extra.map(([k]) => k)).join(",")];
  for (const r of rows) lines.push(columns.map(c => csvCell(r.cells[c.key])).concat(extra.map(([, get]) => csvCell(get(r)))).join(","));
  return lines.join("\n") + "\n";
}
