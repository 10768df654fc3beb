// GENERATED from extensions/src/ by extensions/build.mjs (esbuild): do not edit; see docs/contributing.md

// src/shared/format.js
var INT_LIMIT = 1e15;
function fmtNum(v) {
  if (Number.isNaN(v)) return "nan";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  if (v === 0) return "0";
  if (Number.isInteger(v) && Math.abs(v) < INT_LIMIT) return String(v);
  const [mant, exp] = Math.abs(v).toExponential(3).split("e");
  const digits = mant.replace(".", ""), e = Number(exp), sign = v < 0 ? "-" : "";
  if (e >= -3 && e <= 3) {
    const whole = e >= 0 ? digits.slice(0, e + 1) : "0";
    const frac = (e >= 0 ? digits.slice(e + 1) : "0".repeat(-e - 1) + digits).replace(/0+$/, "");
    return sign + whole + (frac ? "." + frac : "");
  }
  return sign + digits[0] + "." + digits.slice(1) + "e" + (e >= 0 ? "+" : "-") + String(Math.abs(e)).padStart(2, "0");
}
function fmt(v, kind) {
  if (v === null || v === void 0) return "–";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (Array.isArray(v)) return "[" + v.map((x) => fmt(x, kind === "shape" ? "num" : kind)).join(", ") + "]";
  if (typeof v === "number") {
    if (kind === "cos" && Math.abs(v) < 2) {
      const s = Math.abs(v).toFixed(6);
      return (v < 0 && Number(s) !== 0 ? "-" : "") + s;
    }
    return fmtNum(v) + (kind === "x" ? "x" : "");
  }
  return String(v);
}
function fmtExp(v, digits = 1) {
  if (v === null || v === void 0) return "–";
  if (!Number.isFinite(v)) return fmtNum(v);
  return (v < 0 ? "-" : "") + Math.abs(v).toExponential(digits);
}
function shapeText(s) {
  return fmt(s === void 0 ? null : s, "shape");
}
function plotText(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// src/shared/dom.js
function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === void 0 || v === null || v === false) continue;
    if (k === "on") {
      for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
      continue;
    }
    e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === void 0 || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
var SVGNS = "http://www.w3.org/2000/svg";
function svgEl(tag, attrs, ...children) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== void 0 && v !== null) e.setAttribute(k, String(v));
  for (const c of children) if (c !== void 0 && c !== null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}
var svgSerial = 0;
function nextSvgSerial() {
  return ++svgSerial;
}
function setSvg(box, svg) {
  box.innerHTML = svg || "";
  const n = nextSvgSerial();
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
function kv(rows, cls) {
  return h(
    "table",
    { class: "leapp-kv " + (cls || "") },
    h("tbody", {}, rows.filter((r) => r).map(([k, v, kind, title]) => h("tr", {}, h("th", { title }, k), h("td", {}, fmt(v, kind)))))
  );
}
function labelled(columns, values, skipEmpty) {
  const out = [];
  (columns || []).forEach((c, i) => {
    const v = values ? values[i] : null;
    if (skipEmpty && (v === null || v === void 0 || v === "")) return;
    out.push([c.label, v, c.type, c.description || null]);
  });
  return out;
}
function download(name, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h("a", { href: url, download: name, style: "display:none" });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 4e3);
}

// src/shared/plot.js
function hasPlotly() {
  return typeof globalThis.Plotly !== "undefined";
}
function clearPlot(div) {
  if (hasPlotly() && div._fullLayout) globalThis.Plotly.purge(div);
  div.replaceChildren();
}
function themed(div, layout) {
  const fg = typeof getComputedStyle === "function" && div.isConnected && getComputedStyle(div).color || "#444";
  const grid = "rgba(128,128,128,0.3)";
  layout.font = Object.assign({ color: fg }, layout.font || {});
  for (const ax of ["xaxis", "yaxis"]) layout[ax] = Object.assign({ gridcolor: grid, linecolor: grid, zerolinecolor: grid }, layout[ax] || {});
  return layout;
}

// src/shared/histogram.js
var _f64 = new Float64Array(1);
var _u64 = new BigUint64Array(_f64.buffer);
function binEdge(b) {
  _u64[0] = BigInt(b) << 50n;
  return _f64[0];
}
function histTitle(...parts) {
  return parts.map((p) => plotText(p === null || p === void 0 ? "" : p)).join(" · ");
}
var CHAR_PX = 7.2;
var TICK_GAP_PX = 10;
var HIST_MARGIN = { l: 50, r: 10, t: 34, b: 44 };
var labelPx = (s) => s.length * CHAR_PX;
function histTicks(n, first, nonfinite, plotPx) {
  const xmax = nonfinite ? n + 3 : n + 1;
  const range = [-0.6, xmax + 0.6];
  const perUnit = plotPx / (range[1] - range[0]);
  const fits = (a, b) => (b.x - a.x) * perUnit >= (labelPx(a.text) + labelPx(b.text)) / 2 + TICK_GAP_PX;
  const zero = { x: 0, text: "0" };
  const nf = nonfinite ? { x: n + 3, text: "non-finite" } : null;
  const widest = labelPx(fmtExp(binEdge(first), 1)) + TICK_GAP_PX;
  const step = Math.max(1, Math.ceil(n / 7), Math.ceil(widest / perUnit));
  const kept = [zero];
  for (let i = 0; i < n; i += step) {
    const t = { x: i + 2 - 0.5, text: fmtExp(binEdge(first + i), 1) };
    if (fits(kept[kept.length - 1], t) && (!nf || fits(t, nf))) kept.push(t);
  }
  if (nf) kept.push(nf);
  return { tickvals: kept.map((t) => t.x), ticktext: kept.map((t) => t.text), range };
}
function histTraces(hist, nonfiniteLabel, plotPx) {
  const xs = [0], ys = [hist.zero], text = ["exactly 0"], colors = ["#1565c0"];
  const counts = hist.counts || [], n = counts.length, first = hist.first_bin || 0;
  for (let i = 0; i < n; i++) {
    xs.push(i + 2);
    ys.push(counts[i]);
    colors.push("#ef6c00");
    text.push("[" + fmtExp(binEdge(first + i), 2) + ", " + fmtExp(binEdge(first + i + 1), 2) + ")");
  }
  const ticks = histTicks(n, first, hist.nonfinite, plotPx > 0 ? plotPx : 360);
  if (hist.nonfinite) {
    xs.push(n + 3);
    ys.push(hist.nonfinite);
    colors.push("#6a1b9a");
    text.push(nonfiniteLabel || "non-finite");
  }
  const annotations = hist.nonfinite ? [{
    x: n + 3,
    y: hist.nonfinite,
    yanchor: "bottom",
    showarrow: false,
    text: "non-finite " + hist.nonfinite,
    font: { size: 10, color: "#6a1b9a" }
  }] : [];
  return {
    data: [{
      type: "bar",
      x: xs,
      y: ys,
      text,
      hovertemplate: "%{text}<br>count %{y}<extra></extra>",
      marker: { color: colors },
      width: 0.92,
      textposition: "none"
    }],
    tickvals: ticks.tickvals,
    ticktext: ticks.ticktext,
    range: ticks.range,
    annotations
  };
}
function drawHist(div, hist, title, nonfiniteLabel) {
  if (!hist || hist.zero === 0 && !(hist.counts || []).length && !hist.nonfinite) {
    clearPlot(div);
    div.append(h("div", { class: "leapp-empty" }, "no histogram stored for this row"));
    return;
  }
  const t = histTraces(hist, nonfiniteLabel, (div.clientWidth || 0) - HIST_MARGIN.l - HIST_MARGIN.r);
  if (!hasPlotly()) {
    clearPlot(div);
    div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded; counts: zero=" + hist.zero + " bins=" + (hist.counts || []).join(",") + " non-finite=" + (hist.nonfinite || 0)));
    return;
  }
  if (!div._fullLayout) clearPlot(div);
  const layout = {
    title: { text: title, font: { size: 12 } },
    height: 260,
    margin: { ...HIST_MARGIN },
    bargap: 0.05,
    showlegend: false,
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    xaxis: { tickvals: t.tickvals, ticktext: t.ticktext, range: t.range, tickangle: 0, title: { text: "|diff| (log bins; 0 = exact zero)", font: { size: 10 } }, zeroline: false },
    yaxis: { title: { text: "elements", font: { size: 10 } }, rangemode: "tozero" },
    annotations: t.annotations
  };
  const config = { displayModeBar: false, displaylogo: false, showLink: false, responsive: true };
  if (div._fullLayout) globalThis.Plotly.react(div, t.data, themed(div, layout), config);
  else globalThis.Plotly.newPlot(div, t.data, themed(div, layout), config);
}

// src/shared/search.js
var SEARCH_KEYS = [
  { key: "name", aliases: ["id", "row", "tap"], help: "the row's name (part of it)" },
  { key: "status", aliases: ["verdict", "state"], help: "the verdict, its label or the tap status" },
  { key: "reason", aliases: ["reasons", "why"], help: "the reason keys of the verdict" },
  { key: "scope", aliases: ["scopes", "module"], help: "a module and the modules inside it, at any module boundary" },
  { key: "hazards", aliases: ["hazard"], help: "a hazard kind (trace)" },
  { key: "kind", aliases: ["kinds", "type"], help: "output, tap or op tap (verify)" },
  { key: "node", aliases: ["nodes"], help: "the LEAPP node (trace)" },
  { key: "port", aliases: ["ports"], help: "the output port (trace)" },
  { key: "segment", aliases: ["segments"], help: "the segment (repair)" }
];
var BUILTIN = /* @__PURE__ */ new Set(["name", "status", "reason"]);
var ALIAS = new Map(SEARCH_KEYS.flatMap((k) => [[k.key, k.key], ...k.aliases.map((a) => [a, k.key])]));
var KEYS = /* @__PURE__ */ new WeakMap();
function tableKeys(table) {
  if (KEYS.has(table)) return KEYS.get(table).keys;
  const keys = new Set(BUILTIN);
  for (const c of table.columns || []) keys.add(c.key);
  for (const k of table.search_keys || []) keys.add(k);
  KEYS.set(table, { keys, resolved: /* @__PURE__ */ new Map() });
  return keys;
}
function resolveKey(key, table) {
  const keys = tableKeys(table), memo = KEYS.get(table).resolved;
  const k = key.toLowerCase();
  if (memo.has(k)) return memo.get(k);
  let found = null;
  for (const cand of [k, ALIAS.get(k), k.endsWith("s") ? k.slice(0, -1) : k + "s"]) {
    if (cand && keys.has(cand)) {
      found = cand;
      break;
    }
    const a = cand && ALIAS.get(cand);
    if (a && keys.has(a)) {
      found = a;
      break;
    }
  }
  memo.set(k, found);
  return found;
}
function searchText(r, table) {
  const labels = table.status_labels || {};
  const parts = [r.id, r.sub, r.status, labels[r.status], r.tap_status, r.reason];
  for (const k of table.search_keys || []) parts.push(r.cells[k]);
  return parts.filter((x) => x !== null && x !== void 0).join("\n").toLowerCase();
}
function parseQuery(q) {
  return (q || "").toLowerCase().split(/\s+/).filter(Boolean).map((t) => {
    const i = t.indexOf(":");
    return i > 0 ? { key: t.slice(0, i), value: t.slice(i + 1), text: t } : { key: null, value: t, text: t };
  });
}
function scopeMatches(scope, value) {
  const norm = (s) => String(s).toLowerCase().replace(/\//g, ".").replace(/^\.+|\.+$/g, "");
  const v = norm(value);
  if (!v) return true;
  return ("." + norm(scope) + ".").includes("." + v + ".");
}
function matchTerm(r, hay, term, table) {
  if (!term.key) return hay.includes(term.value);
  const key = resolveKey(term.key, table) || (term.key in (r.cells || {}) ? term.key : null);
  if (!key) return hay.includes(term.text);
  const v = term.value;
  if (key === "status") {
    const labels = table.status_labels || {};
    return [r.status, labels[r.status], r.tap_status].some((x) => x && String(x).toLowerCase().includes(v));
  }
  if (key === "reason") return (r.reason || "").toLowerCase().includes(v);
  if (key === "name") return r.id.toLowerCase().includes(v);
  const c = r.cells[key];
  if (c === null || c === void 0) return false;
  if (key === "scope") return scopeMatches(c, v);
  return String(c).toLowerCase().includes(v);
}
function valuesOf(rows, key, table, max) {
  const labels = table.status_labels || {};
  const seen = /* @__PURE__ */ new Set();
  for (const r of rows) {
    let vals;
    if (key === "status") vals = [labels[r.status] || r.status];
    else if (key === "reason") vals = (r.reason || "").split(",");
    else vals = String(r.cells[key] ?? "").split(",");
    for (const v of vals) {
      const t = v.trim();
      if (t) seen.add(t);
    }
    if (seen.size > max) return null;
  }
  return [...seen];
}
function explainQuery(rows, query, table, hay, shown, filter) {
  const terms = parseQuery(query);
  const notes = [];
  for (const t of terms) {
    const key = t.key ? resolveKey(t.key, table) || (rows.some((r) => t.key in (r.cells || {})) ? t.key : null) : null;
    const hits = rows.some((r) => matchTerm(r, hay.get(r.id), t, table));
    if (t.key && !key && !hits) {
      notes.push("unknown key “" + t.key + ":” (keys: " + [...tableKeys(table)].join(", ") + ")");
    } else if (!hits && key) {
      const vals = valuesOf(rows, key, table, 8);
      notes.push("no row has " + key + " “" + t.value + "”" + (vals && vals.length ? " (there are: " + vals.join(", ") + ")" : ""));
    } else if (!hits) {
      notes.push("no row contains “" + t.value + "”");
    }
  }
  if (notes.length) return notes.join("; ");
  if (shown > 0) return "";
  if (terms.length > 1) return "no row matches all of: " + terms.map((t) => t.text).join(", ") + (filter ? " (" + filter + ")" : "");
  if (terms.length === 1 && filter) return "no row matches “" + terms[0].text + "” (" + filter + ")";
  return "";
}
function enterTarget(shown, query, nameKey) {
  const words = parseQuery(query).filter((t) => !t.key || t.key === "name" || t.key === "id").map((t) => t.value).filter(Boolean);
  if (!shown.length) return null;
  if (!words.length) return shown[0];
  const names = (r) => [r.id, nameKey ? r.cells[nameKey] : null, r.cells.node].filter((x) => x !== null && x !== void 0).map((x) => String(x).toLowerCase());
  let best = null, bestRank = 3;
  for (const r of shown) {
    const ns = names(r);
    const rank = words.some((w) => ns.includes(w)) ? 0 : words.some((w) => ns.some((n) => n.startsWith(w))) ? 1 : 2;
    if (rank < bestRank) {
      best = r;
      bestRank = rank;
      if (rank === 0) break;
    }
  }
  return best;
}

// src/shared/table.js
var STATUS_ORDER = { fail: 0, uncompared: 1, pass: 2 };
var NUMERIC = /* @__PURE__ */ new Set(["num", "int", "cos", "x"]);
var ROW_H = 24;
var OVERSCAN = 12;
function windowRange(scrollTop, viewH, headH, n) {
  const top = Math.min(scrollTop, Math.max(0, n * ROW_H - (viewH - headH)));
  const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
  const last = Math.min(n, Math.ceil((top + viewH - headH) / ROW_H) + OVERSCAN);
  return { top, first, last };
}
function scrollTargetFor(i, scrollTop, viewH, headH) {
  const y = i * ROW_H;
  if (viewH && (y < scrollTop || y + ROW_H > scrollTop + viewH - headH)) return Math.max(0, y - (viewH - headH) / 2 + ROW_H / 2);
  return null;
}
function displayColumns(columns, hidden) {
  const vis = columns.filter((c) => !hidden.has(c.key));
  return [...vis.filter((c) => c.pinned), ...vis.filter((c) => !c.pinned)];
}
var WIDTH_CAP = { text: 40, status: 26 };
function columnWidth(c, rows, table, nameKey) {
  let w = c.label.length + 2;
  if (c.type === "status") {
    const labels = table.status_labels || {};
    for (const r of rows) w = Math.max(w, String(labels[r.status] || r.status).length + (r.tap_status && r.tap_status !== "compared" ? r.tap_status.length + 1 : 0) + (r.first_divergent ? 8 : 0));
  } else if (c.type === "verdict") {
    const labels = table.status_labels || {};
    for (const r of rows) {
      const side = (r.sides || {})[c.group] || {};
      const extra = side.tap_status && !["compared", "absent"].includes(side.tap_status) ? side.tap_status.length + 1 : 0;
      w = Math.max(w, String(labels[r.cells[c.key]] || r.cells[c.key] || "–").length + extra + (side.first_divergent ? 8 : 0));
    }
    return Math.min(w, WIDTH_CAP.status) + 2;
  } else if (c.type === "int") {
    for (const r of rows) {
      const v = r.cells[c.key];
      if (v !== null && v !== void 0) w = Math.max(w, String(v).length + 1);
    }
  } else if (NUMERIC.has(c.type)) {
    w = Math.max(w, 10);
  } else {
    for (const r of rows) {
      const v = r.cells[c.key];
      let len = v === null || v === void 0 ? 1 : fmt(v, c.type).length;
      if (c.key === nameKey && r.sub) len += r.sub.length + 2;
      if (len > w) w = len;
    }
  }
  return Math.min(w, WIDTH_CAP[c.type] || 14) + 1;
}
function compareRows(a, b, key, dir, columns) {
  const col = columns.find((c) => c.key === key);
  let x = a.cells[key], y = b.cells[key];
  if (col && col.type === "status") {
    x = STATUS_ORDER[a.status] ?? 9;
    y = STATUS_ORDER[b.status] ?? 9;
  }
  if (x === null || x === void 0) return y === null || y === void 0 ? 0 : 1;
  if (y === null || y === void 0) return -1;
  return (x < y ? -1 : x > y ? 1 : 0) * dir;
}
function nextSort(state, col) {
  if (state.sortKey === col.key) return { sortKey: col.key, sortDir: -state.sortDir };
  return { sortKey: col.key, sortDir: NUMERIC.has(col.type) && col.type !== "int" ? -1 : 1 };
}
function tableItems(rows, columns, table, state, hay, groupKey) {
  const terms = parseQuery(state.query);
  const bad = (r) => table.filter_key ? !!r[table.filter_key] : r.status === "fail";
  let rs = rows.filter((r) => (!state.onlyBad || bad(r)) && terms.every((t) => matchTerm(r, hay.get(r.id), t, table)));
  if (state.sortKey) rs = rs.slice().sort((a, b) => compareRows(a, b, state.sortKey, state.sortDir, columns));
  let items, shownRows;
  if (state.groupBy && groupKey) {
    const order = [], by = /* @__PURE__ */ new Map();
    for (const r of rs) {
      const g = groupOf(r.cells[groupKey], groupKey, state.groupDepth);
      if (!by.has(g)) {
        by.set(g, []);
        order.push(g);
      }
      by.get(g).push(r);
    }
    items = [];
    shownRows = [];
    for (const g of order) {
      const members = by.get(g), collapsed = state.collapsed.has(g);
      items.push({ group: g, n: members.length, nfail: members.filter((r) => r.status === "fail").length, collapsed });
      for (const r of members) {
        shownRows.push(r);
        if (!collapsed) items.push({ r });
      }
    }
  } else {
    shownRows = rs;
    items = rs.map((r) => ({ r }));
  }
  const indexOf = /* @__PURE__ */ new Map();
  items.forEach((it, i) => {
    if (it.r) indexOf.set(it.r.id, i);
  });
  return { items, shownRows, indexOf };
}
function groupOf(value, key, depth) {
  if (value === null || value === void 0) return "";
  if (key !== "scope" || !depth) return String(value);
  return String(value).split(".").slice(0, depth).join(".");
}
function groupLevels(rows, key) {
  const deepest = key === "scope" ? Math.max(1, ...rows.map((r) => r.cells[key] ? String(r.cells[key]).split(".").length : 1)) : 1;
  const out = [];
  for (let d = 1; d <= deepest; d++) {
    const size = /* @__PURE__ */ new Map();
    for (const r of rows) {
      const g = groupOf(r.cells[key], key, key === "scope" ? d : null);
      size.set(g, (size.get(g) || 0) + 1);
    }
    let several = 0;
    for (const n of size.values()) if (n > 1) several += n;
    out.push({ depth: d, groups: size.size, several });
  }
  return out;
}
function autoDepth(levels, nRows) {
  let best = levels[0] || { depth: 1, groups: 0 };
  for (const l of levels) {
    if (l.several * 3 >= nRows * 2 && l.groups > best.groups) best = l;
  }
  return best.depth;
}
function csvCell(v) {
  if (v === null || v === void 0) return "";
  const s = Array.isArray(v) ? "[" + v.join(", ") + "]" : String(v);
  return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}
function tableCsv(columns, rows) {
  const keys = new Set(columns.map((c) => c.key));
  const extra = [["verdict", (r) => r.status], ["reason", (r) => r.reason]].filter(([k]) => !keys.has(k));
  const lines = [columns.map((c) => csvCell(c.key)).concat(extra.map(([k]) => k)).join(",")];
  for (const r of rows) lines.push(columns.map((c) => csvCell(r.cells[c.key])).concat(extra.map(([, get]) => csvCell(get(r)))).join(","));
  return lines.join("\n") + "\n";
}

// src/shared/finding.js
var WORD = /[A-Za-z0-9_]/;
function findingParts(text, links) {
  const names = (links || []).filter((l) => l && l.text).slice().sort((a, b) => b.text.length - a.text.length);
  const out = [];
  let plain = "", i = 0;
  while (i < text.length) {
    const hit = names.find((l) => text.startsWith(l.text, i) && !WORD.test(text[i - 1] || "") && !WORD.test(text[i + l.text.length] || ""));
    if (hit) {
      if (plain) out.push({ text: plain, row: null });
      out.push({ text: hit.text, row: hit.row });
      plain = "";
      i += hit.text.length;
    } else {
      plain += text[i];
      i += 1;
    }
  }
  if (plain) out.push({ text: plain, row: null });
  return out;
}
function findingEl(finding, onRow) {
  if (!finding || !finding.text) return null;
  const parts = findingParts(finding.text, finding.links).map((p) => p.row && onRow ? h("a", {
    class: "leapp-finding-link",
    href: "#",
    "data-leapp-finding-row": p.row,
    on: { click: (e) => {
      e.preventDefault();
      onRow(p.row);
    } }
  }, p.text) : p.text);
  return h("div", {
    class: "leapp-finding leapp-" + (finding.status || "pass"),
    "data-leapp-finding": "",
    "data-leapp-finding-status": finding.status || "pass",
    role: "status"
  }, ...parts);
}

// src/shared/permalink.js
function parseFragment(hash, kind) {
  if (!hash) return null;
  const p = new URLSearchParams(hash.slice(1));
  if (p.get("view") && p.get("view") !== kind) return null;
  return { tab: p.get("tab"), row: p.get("row"), sample: p.get("sample"), q: p.get("q") };
}
function readFragment(kind) {
  if (typeof location === "undefined" || !location.hash) return null;
  return parseFragment(location.hash, kind);
}
function fragmentOf(kind, state) {
  const p = new URLSearchParams();
  p.set("view", kind);
  p.set("tab", state.tab);
  if (state.row) p.set("row", state.row);
  if (state.sample !== null && state.sample !== void 0) p.set("sample", String(state.sample));
  if (state.query) p.set("q", state.query);
  return p.toString();
}

// src/shared/elements.js
function elementTraces(el) {
  const ys = el.max_abs.map((v) => v === null || v === void 0 ? 0 : v);
  const colors = el.names.map((n) => n === el.worst ? "#c62828" : "#ef6c00");
  return [{
    type: "bar",
    x: el.names.map(plotText),
    y: ys,
    customdata: el.names.map(plotText),
    marker: { color: colors },
    text: el.nrmse.map((v) => "nrmse " + fmt(v)),
    textposition: "none",
    hovertemplate: "%{x}<br>max |diff| %{y:.3e}<br>%{text}<extra></extra>"
  }];
}
function elementsBlock(el, owner) {
  if (!el || !el.names || !el.names.length) return null;
  const plot = h("div", { class: "leapp-elementplot", "data-leapp-element-plot": owner });
  const picked = h(
    "div",
    { class: "leapp-muted", "data-leapp-element-picked": "" },
    el.worst ? "worst element: " + el.worst : "no element differs"
  );
  const rows = el.names.map((n, i) => h(
    "tr",
    {
      "data-leapp-element": n,
      "data-leapp-worst": n === el.worst ? "true" : null,
      class: n === el.worst ? "leapp-row leapp-fail" : "leapp-row"
    },
    h("td", {}, n),
    h("td", {}, fmt(el.max_abs[i])),
    h("td", {}, fmt(el.nrmse[i]))
  ));
  const pick = (name) => {
    for (const tr of rows) tr.classList.toggle("leapp-selected", tr.getAttribute("data-leapp-element") === name);
    const i = el.names.indexOf(name);
    if (i >= 0) picked.textContent = name + ": max |diff| " + fmt(el.max_abs[i]) + ", nrmse " + fmt(el.nrmse[i]) + (name === el.worst ? " (worst element)" : "");
    picked.setAttribute("data-leapp-element-picked", name);
  };
  rows.forEach((tr) => tr.addEventListener("click", () => pick(tr.getAttribute("data-leapp-element"))));
  const table = h(
    "table",
    { class: "leapp-kv leapp-elements" },
    h("thead", {}, h("tr", {}, ["element", "max |diff|", "nrmse"].map((x) => h("th", {}, x)))),
    h("tbody", {}, rows)
  );
  const box = h(
    "div",
    { class: "leapp-elementbox", "data-leapp-elements": owner },
    h("div", { class: "leapp-sub" }, "per element" + (el.label ? " (" + el.label + ")" : "") + " · worst: " + (el.worst || "–")),
    plot,
    picked,
    h("details", { class: "leapp-elementtable" }, h("summary", {}, el.names.length + " elements"), table)
  );
  box.draw = () => drawElements(plot, el, pick);
  return box;
}
function drawElements(div, el, onPick) {
  clearPlot(div);
  if (!hasPlotly()) {
    div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded"));
    return;
  }
  const many = el.names.length > 24;
  const layout = {
    height: 220,
    margin: { l: 50, r: 10, t: 10, b: many ? 90 : 60 },
    showlegend: false,
    bargap: 0.15,
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    xaxis: { type: "category", tickangle: -40, automargin: true, tickfont: { size: many ? 8 : 10 } },
    yaxis: { title: { text: "max |diff|", font: { size: 10 } }, rangemode: "tozero" }
  };
  globalThis.Plotly.newPlot(div, elementTraces(el), themed(div, layout), { displayModeBar: false, displaylogo: false, showLink: false, responsive: true });
  if (div.on) div.on("plotly_click", (ev) => {
    const p = ev.points && ev.points[0];
    if (p) onPick(el.names[p.pointIndex]);
  });
}

// src/shared/histpanel.js
function whyBlock(r, table) {
  const words = table.reasons || {};
  const keys = (r.reason || "").split(",").map((x) => x.trim()).filter(Boolean);
  const label = (table.status_labels || {})[r.status] || r.status;
  const text = r.why ? r.why : keys.length ? keys.map((k) => words[k] || k).join("; ") : r.status === "pass" ? "no criterion fires" : "–";
  return h("div", { class: "leapp-why leapp-" + (r.tone || r.status), "data-leapp-why": r.reason || "" }, h("b", {}, label + " — why: "), text);
}
function drawRowPanel(panel, plot, r, sampleKey, siblings, view, table, on) {
  const s = r.samples.find((x) => x.key === sampleKey) || r.samples[0];
  panel.setAttribute("data-leapp-hist-row", r.id);
  panel.setAttribute("data-leapp-hist-sample", s ? s.key : "");
  const picker = h("select", { "data-leapp-sample-picker": "", on: { change: (e) => {
    if (siblings) on.row(e.target.value);
    else on.sample(e.target.value);
  } } });
  const opts = siblings ? siblings.map((x) => [x.id, x.samples[0] ? x.samples[0].label + " · " + x.status : x.id, x.id === r.id]) : r.samples.map((x) => [x.key, x.label, s && x.key === s.key]);
  for (const [v, label, sel] of opts) picker.append(h("option", { value: v, selected: sel }, label));
  panel.append(h(
    "div",
    { class: "leapp-histhead" },
    h("span", { class: "leapp-pill leapp-" + r.status }, (table.status_labels || {})[r.status] || r.status),
    " ",
    h("b", { class: "leapp-histname" }, r.id),
    r.sub ? h("span", { class: "leapp-muted" }, " " + r.sub) : null,
    " ",
    opts.length > 1 ? h("label", {}, "sample ", picker) : h("span", { class: "leapp-muted" }, s ? s.label : "")
  ));
  panel.append(whyBlock(r, table));
  const actions = on.actions ? on.actions(r) : [];
  if (actions.length) panel.append(h("div", { class: "leapp-row-actions" }, actions));
  panel.append(plot);
  plot.style.display = s && s.hist === false ? "none" : "";
  if (s && s.hist === false) clearPlot(plot);
  else drawHist(plot, s && s.hist, histTitle(table.hist_title || "|diff|", r.id, s ? s.label : ""), table.nonfinite_label);
  const note = s && s.note || r.note;
  if (note) panel.append(h("div", { class: "leapp-note" }, note));
  const els = s && s.elements ? elementsBlock(s.elements, r.id) : null;
  if (els) {
    panel.append(els);
    els.draw();
  }
  const side = h("div", { class: "leapp-histside" });
  if (s) side.append(h("div", {}, h("div", { class: "leapp-sub" }, "metrics"), kv(labelled(table.panel_columns, s.m), "leapp-metrics")));
  if (r.info && r.info.length) side.append(h("div", {}, h("div", { class: "leapp-sub" }, "row"), kv(labelled(table.info_columns, r.info, true), "leapp-info")));
  const inputs = s ? s.inputs || (view.inputs || {})[s.key] || [] : [];
  if (inputs.length) {
    side.append(h(
      "div",
      {},
      h("div", { class: "leapp-sub" }, "inputs of this sample"),
      h(
        "table",
        { class: "leapp-kv leapp-inputs" },
        h("thead", {}, h("tr", {}, ["input", "shape", "dtype", "range", "index"].map((x) => h("th", {}, x)))),
        h("tbody", {}, inputs.map((i) => h(
          "tr",
          {},
          h("td", {}, i.name),
          h("td", {}, shapeText(i.shape)),
          h("td", {}, i.dtype),
          h("td", {}, fmt(i.range)),
          h("td", {}, fmt(i.index))
        )))
      )
    ));
  }
  panel.append(side);
}

// src/shared/vtable.js
var PAD = 13;
var cssWidth = (ch, n) => "calc(" + ch + "ch + " + n * PAD + "px)";
function rowHooks(r) {
  const out = {};
  for (const [k, v] of Object.entries(r.attrs || {})) if (k.startsWith("data-leapp-") && v !== null && v !== void 0) out[k] = v;
  return out;
}
function virtualTable(o) {
  const { columns, rows, table, nameKey, groupKey, state } = o;
  const colgroup = h("colgroup", {});
  const thead = h("thead", {});
  const tbody = h("tbody", {});
  const tableEl = h("table", { class: "leapp-table leapp-virtual" }, colgroup, thead, tbody);
  const wrap = h("div", { class: "leapp-tablewrap", tabindex: "0", on: { scroll: () => renderWindow(false) } }, tableEl);
  const rowEls = /* @__PURE__ */ new Map();
  let items = [];
  let lastRange = null;
  let pinLeft = {};
  const widths = new Map(columns.map((c) => [c.key, columnWidth(c, rows, table, nameKey)]));
  const shownColumns = () => displayColumns(columns, state.hidden);
  function buildHead() {
    const cols = shownColumns();
    colgroup.replaceChildren(...cols.map((c) => h("col", { style: "width:" + cssWidth(widths.get(c.key), 1) })));
    tableEl.style.width = cssWidth(cols.reduce((a, c) => a + widths.get(c.key), 0), cols.length);
    pinLeft = {};
    let ch = 0, k = 0;
    for (const c of cols) if (c.pinned) {
      pinLeft[c.key] = cssWidth(ch, k);
      ch += widths.get(c.key);
      k++;
    }
    const tr = h("tr", {});
    for (const c of cols) {
      tr.append(h("th", {
        "data-leapp-col": c.key,
        class: "leapp-" + c.type + (c.pinned ? " leapp-pin" : "") + (state.sortKey === c.key ? " leapp-sorted" : ""),
        style: c.pinned ? "left:" + pinLeft[c.key] : null,
        title: (c.description ? c.description + " · " : "") + "sort by " + c.label,
        on: { click: () => o.onSort(c) }
      }, c.label));
    }
    const groupRow = o.headerRow ? o.headerRow(cols) : null;
    thead.replaceChildren(...groupRow ? [groupRow] : [], tr);
    pinsMeasured = measurePins();
  }
  let pinsMeasured = false;
  function measurePins() {
    const ths = [...thead.querySelectorAll("th.leapp-pin")];
    if (!ths.length) return true;
    if (!ths[0].offsetWidth) return false;
    let x = 0;
    for (const th of ths) {
      pinLeft[th.dataset.leappCol] = x + "px";
      th.style.left = x + "px";
      x += th.offsetWidth;
    }
    return true;
  }
  function markSorted() {
    for (const th of thead.querySelectorAll("th")) th.classList.toggle("leapp-sorted", th.dataset.leappCol === state.sortKey);
  }
  function spacer(px, n) {
    return h("tr", { class: "leapp-spacer", "aria-hidden": "true" }, h("td", { colspan: n, style: "height:" + px + "px" }));
  }
  function rowEl(r, cols) {
    const tr = h("tr", {
      ...rowHooks(r),
      "data-leapp-row": r.id,
      "data-leapp-status": r.status,
      "data-leapp-tap-status": r.tap_status,
      "data-leapp-first-divergent": r.first_divergent ? "true" : null,
      "data-leapp-tone": r.tone || null,
      class: "leapp-row leapp-" + r.status + (r.tone ? " leapp-tone-" + r.tone : "") + (r.first_divergent ? " leapp-first" : "") + (r.id === state.row ? " leapp-selected" : ""),
      on: { click: () => o.onRow(r.id) }
    });
    for (const c of cols) {
      const v = r.cells[c.key];
      const pin = c.pinned ? { class: "leapp-pin", style: "left:" + pinLeft[c.key] } : {};
      if (o.cellTypes[c.type]) tr.append(o.cellTypes[c.type](v, r, c, table));
      else if (c.type === "status") {
        const label = (table.status_labels || {})[r.status] || r.status;
        const extra = r.tap_status && r.tap_status !== "compared" ? r.tap_status : null;
        tr.append(h(
          "td",
          { class: "leapp-status" + (c.pinned ? " leapp-pin" : ""), style: pin.style, title: r.why || r.reason ? "why: " + (r.why || r.reason) : null },
          h("span", { class: "leapp-pill leapp-" + (r.tone || r.status) }, label),
          extra ? h("span", { class: "leapp-muted" }, " " + extra) : null,
          r.first_divergent ? h("span", { class: "leapp-firstmark", title: "first divergent row in model order" }, "◀ first") : null
        ));
      } else if (c.key === nameKey) {
        tr.append(h(
          "td",
          { class: "leapp-text leapp-name" + (c.pinned ? " leapp-pin" : ""), style: pin.style, title: r.sub ? r.id + " · " + r.sub : r.id },
          fmt(v, c.type),
          r.sub ? h("span", { class: "leapp-sub-name" }, " " + r.sub) : null
        ));
      } else {
        const text = fmt(v, c.type);
        tr.append(h("td", {
          class: "leapp-" + c.type + (c.pinned ? " leapp-pin" : ""),
          style: pin.style,
          title: typeof v === "number" ? String(v) : text.length > 12 ? text : null
        }, text));
      }
    }
    rowEls.set(r.id, tr);
    return tr;
  }
  function groupEl(it, n) {
    const tr = h(
      "tr",
      {
        class: "leapp-grouprow",
        "data-leapp-group-row": it.group,
        on: { click: () => o.onGroup(it.group) }
      },
      h("td", { colspan: n }, h(
        "span",
        { class: "leapp-pin-inline" },
        (it.collapsed ? "▸ " : "▾ ") + (it.group || "(no " + groupKey + ")"),
        h("span", { class: "leapp-muted" }, " · " + it.n + (it.n === 1 ? " row" : " rows") + (it.nfail ? " · " : "")),
        it.nfail ? h("span", { class: "leapp-firstmark" }, it.nfail + " " + ((table.status_labels || {}).fail || "fail")) : null
      ))
    );
    return tr;
  }
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
    if (at !== void 0) {
      wrap.scrollTop = top;
      lastRange = [first, last];
    }
  }
  function scrollToIndex(i, redraw) {
    if (i === void 0) return;
    const headH = thead.offsetHeight || ROW_H;
    const at = scrollTargetFor(i, wrap.scrollTop, wrap.clientHeight, headH);
    if (at !== null) renderWindow(true, at);
    else renderWindow(redraw !== false);
  }
  return {
    wrap,
    thead,
    rowEls,
    buildHead,
    renderWindow,
    scrollToIndex,
    markSorted,
    shownColumns,
    setItems(list) {
      items = list;
    },
    // the next draw redraws whatever rows are in view (another set of rows)
    invalidate() {
      lastRange = null;
    },
    count: () => items.length,
    // the selected row's class (rows drawn later take it from state.row)
    markSelected(id) {
      for (const [rid, tr] of rowEls) tr.classList.toggle("leapp-selected", rid === id);
    }
  };
}

// src/views/compare.js
function groupHeaderRow(table, shown) {
  const cols = shown || table.columns || [];
  if (!cols.some((c) => c.group)) return null;
  const info = new Map((table.groups || []).map((g) => [g.key, g]));
  const tr = h("tr", { class: "leapp-grouprow" });
  let i = 0;
  while (i < cols.length) {
    const g = cols[i].group || null;
    let j = i;
    while (j < cols.length && (cols[j].group || null) === g) j++;
    const gi = g ? info.get(g) || { label: g } : null;
    tr.append(h("th", {
      colspan: j - i,
      "data-leapp-group": g,
      title: gi ? gi.title : null,
      class: g ? "leapp-group leapp-group-" + (gi.kind || "side") : null
    }, gi ? gi.label : ""));
    i = j;
  }
  return tr;
}
function verdictCell(v, r, c, table) {
  const side = (r.sides || {})[c.group] || {};
  const label = (table.status_labels || {})[v] || v || "–";
  const extra = side.tap_status && !["compared", "absent"].includes(side.tap_status) ? side.tap_status : null;
  return h(
    "td",
    { class: "leapp-status leapp-gstart", "data-leapp-side": c.group, "data-leapp-verdict": v },
    h("span", { class: "leapp-pill leapp-" + v }, label),
    extra ? h("span", { class: "leapp-muted" }, " " + extra) : null,
    side.first_divergent ? h("span", { class: "leapp-firstmark", title: "first divergent row of this run" }, "◀ first") : null
  );
}
function flipCell(v, r, c, table) {
  const label = v ? (table.flip_labels || {})[v] || v : "";
  return h("td", { class: "leapp-flipcell leapp-gstart" + (v ? " leapp-" + v : "") }, label);
}
var CELL_TYPES = { verdict: verdictCell, flip: flipCell };
function renderGroupPanel(panel, r, state, table, onSample) {
  const plots = panel._leappPlots || (panel._leappPlots = /* @__PURE__ */ new Map());
  const s = r.samples.find((x) => x.key === state.sample) || r.samples[0];
  panel.setAttribute("data-leapp-hist-row", r.id);
  panel.setAttribute("data-leapp-hist-sample", s ? s.key : "");
  const picker = h(
    "select",
    { "data-leapp-sample-picker": "", on: { change: (e) => onSample(e.target.value) } },
    r.samples.map((x) => h("option", { value: x.key, selected: s && x.key === s.key }, x.label))
  );
  panel.append(h(
    "div",
    { class: "leapp-histhead" },
    h("span", { class: "leapp-pill leapp-" + r.status }, (table.status_labels || {})[r.status] || r.status),
    " ",
    h("b", { class: "leapp-histname" }, r.id),
    " ",
    r.flip ? h("span", { class: "leapp-flipcell leapp-" + r.flip }, (table.flip_labels || {})[r.flip] || r.flip) : null,
    " ",
    r.samples.length > 1 ? h("label", {}, "sample ", picker) : h("span", { class: "leapp-muted" }, s ? s.label : "")
  ));
  if (!s) return;
  const sides = (table.groups || []).filter((g) => g.kind === "side");
  const row = h("div", { class: "leapp-cmp-plots" });
  panel.append(row);
  const draws = [];
  for (const g of sides) {
    const d = (s.sides || {})[g.key] || {};
    const v = ((r.sides || {})[g.key] || {}).status;
    if (!plots.has(g.key)) plots.set(g.key, h("div", { class: "leapp-histplot" }));
    const plot = plots.get(g.key);
    const box = h(
      "div",
      { class: "leapp-cmp-side", "data-leapp-hist-group": g.key, "data-leapp-verdict": v },
      h("div", { class: "leapp-sub" }, h("span", { class: "leapp-pill leapp-" + v }, (table.status_labels || {})[v] || v), " ", g.label)
    );
    row.append(box);
    if (d.present) {
      box.append(plot);
      draws.push(() => drawHist(plot, d.hist, histTitle(table.hist_title || "|diff|", r.id, g.label, s.label)));
    } else {
      box.append(h("div", { class: "leapp-empty" }, d.note || "absent in this run"));
    }
    if (d.present && d.note) box.append(h("div", { class: "leapp-note" }, d.note));
  }
  for (const draw of draws) draw();
  const m = s.metrics || { head: [], rows: [] };
  const side = h("div", { class: "leapp-histside" });
  side.append(h(
    "div",
    {},
    h("div", { class: "leapp-sub" }, "metrics, run by run"),
    h(
      "table",
      { class: "leapp-kv leapp-cmp-metrics" },
      h("thead", {}, h("tr", {}, m.head.map((x) => h("th", {}, x)))),
      h("tbody", {}, m.rows.map((row2) => h(
        "tr",
        {},
        h("th", {}, row2.label),
        row2.cells.map(([v, kind]) => h("td", { title: typeof v === "number" ? String(v) : null }, fmt(v, kind)))
      )))
    )
  ));
  if (r.info && r.info.length) side.append(h("div", {}, h("div", { class: "leapp-sub" }, "row"), kv(r.info)));
  panel.append(side);
}

// src/tabs/table.js
function tableTab(ctx, panel) {
  const { view, host, state, table, rows, columns, byId } = ctx;
  const groups = /* @__PURE__ */ new Map();
  for (const r of rows) if (r.group) {
    if (!groups.has(r.group)) groups.set(r.group, []);
    groups.get(r.group).push(r);
  }
  const nameKey = (columns.find((c) => c.key === "name") || columns.find((c) => c.type === "text") || {}).key;
  const groupKey = columns.some((c) => c.key === "scope") ? "scope" : columns.some((c) => c.key === "node") ? "node" : null;
  const hay = new Map(rows.map((r) => [r.id, searchText(r, table)]));
  const levels = groupKey ? groupLevels(rows, groupKey) : [];
  if (state.groupDepth === null || state.groupDepth === void 0) state.groupDepth = groupKey === "scope" ? autoDepth(levels, rows.length) : null;
  const noun = table.row_noun || "row";
  const nouns = (n) => n + " " + noun + (n === 1 ? "" : "s");
  const jumpStatus = table.jump_status || "fail";
  const jumpLabel = (table.jump_label || "divergent") + (noun === "row" ? "" : " " + noun);
  const vt = virtualTable({
    columns,
    rows,
    table,
    nameKey,
    groupKey,
    state,
    cellTypes: CELL_TYPES,
    headerRow: (cols) => groupHeaderRow(table, cols),
    onRow: (id) => ctx.select(id, null, "click"),
    onGroup: (g) => toggleGroup(g),
    onSort: (c) => {
      Object.assign(state, nextSort(state, c));
      refresh();
      refocus();
    }
  });
  const { wrap, thead } = vt;
  const refocus = () => {
    if (wrap.isConnected) wrap.focus({ preventScroll: true });
  };
  const histPanel = h("div", { class: "leapp-hist", "data-leapp-hist-row": "", "data-leapp-hist-sample": "" });
  const filterBox = h("input", { type: "checkbox", "data-leapp-filter": table.filter_id || "divergent", on: { change: (e) => {
    state.onlyBad = e.target.checked;
    refresh();
    refocus();
  } } });
  const search = h("input", {
    type: "search",
    class: "leapp-search",
    "data-leapp-search": "",
    spellcheck: "false",
    placeholder: "search: name, op, " + (groupKey ? groupKey + ":…, " : "") + "status:…, reason:…",
    title: "every term must match; key:value looks in one column (scope:layer.1 = that module and the ones inside it, at any module boundary; status:diverged, reason:non-finite, kind:op, hazard:trace-loss; any column's key); Enter opens the row named exactly so, else the first match",
    on: { input: (e) => setQuery(e.target.value, "search"), keydown: onSearchKey }
  });
  const count = h("span", { class: "leapp-muted", "data-leapp-count": "" });
  const searchNote = h("span", { class: "leapp-msg leapp-search-note", "data-leapp-search-note": "", role: "status" });
  const msgEl = h("span", { class: "leapp-msg", "data-leapp-msg": "" });
  const sortInfo = h("span", { class: "leapp-sortinfo" }, "model order");
  const groupBox = groupKey ? h("input", { type: "checkbox", "data-leapp-group": groupKey, on: { change: (e) => {
    state.groupBy = e.target.checked;
    refresh();
    refocus();
  } } }) : null;
  const depthSel = levels.length > 1 ? h(
    "select",
    {
      "data-leapp-group-depth": "",
      title: "how deep in the module scope the groups are",
      on: { change: (e) => {
        state.groupDepth = Number(e.target.value);
        state.collapsed.clear();
        state.groupBy = true;
        groupBox.checked = true;
        refresh();
        refocus();
      } }
    },
    levels.map((l) => h("option", { value: String(l.depth), selected: l.depth === state.groupDepth }, "depth " + l.depth + " · " + l.groups + " group" + (l.groups === 1 ? "" : "s")))
  ) : null;
  const panelBtn = h("button", {
    class: "leapp-btn",
    "data-leapp-panel-toggle": "",
    title: "show or hide the side panel (histogram and metrics)",
    on: { click: () => {
      togglePanel();
      refocus();
    } }
  }, "hide panel ▸");
  const linkBox = h("input", { type: "text", class: "leapp-linkbox", readonly: true, "data-leapp-link": "", style: "display:none" });
  const colMenu = h(
    "details",
    { class: "leapp-colmenu" },
    h("summary", { class: "leapp-btn" }, "columns"),
    h("div", { class: "leapp-colmenu-list" }, columns.filter((c) => c.key !== nameKey).map((c) => h("label", { title: c.description || null }, h("input", {
      type: "checkbox",
      "data-leapp-col-toggle": c.key,
      checked: !state.hidden.has(c.key),
      on: { change: (e) => {
        if (e.target.checked) state.hidden.delete(c.key);
        else state.hidden.add(c.key);
        vt.buildHead();
        vt.renderWindow(true);
      } }
    }), " " + c.label)))
  );
  if (panel) {
    panel.append(...[
      h("div", { class: "leapp-toolbar" }, h("span", { class: "leapp-ttitle" }, table.title || "")),
      h(
        "div",
        { class: "leapp-toolbar" },
        search,
        count,
        searchNote,
        h("label", {}, filterBox, " " + (table.filter_label || "divergent only")),
        groupBox ? h("label", { title: "rows under one header per " + groupKey + " (click a header to fold it)" }, groupBox, " group by " + groupKey) : null,
        depthSel,
        h("button", { class: "leapp-btn", "data-leapp-prev-divergent": "", title: "previous " + jumpLabel + " (p or k)", on: { click: () => {
          jumpDivergent(-1, "key");
          refocus();
        } } }, "▲ prev " + jumpLabel),
        h("button", { class: "leapp-btn", "data-leapp-next-divergent": "", title: "next " + jumpLabel + " (n or j)", on: { click: () => {
          jumpDivergent(1, "key");
          refocus();
        } } }, "▼ next " + jumpLabel),
        sortInfo,
        h("button", { class: "leapp-btn", "data-leapp-sort-reset": "", on: { click: () => {
          state.sortKey = null;
          refresh();
          refocus();
        } } }, "back to model order"),
        colMenu,
        h("button", {
          class: "leapp-btn",
          "data-leapp-download-csv": "",
          title: "the table as shown (filtered, sorted, shown columns), full precision",
          on: { click: () => downloadCsv() }
        }, "download CSV"),
        host.permalink ? h("button", {
          class: "leapp-btn",
          "data-leapp-copy-link": "",
          title: "a link to this view, tab, row and sample",
          on: { click: () => copyLink() }
        }, "copy link") : null,
        panelBtn,
        msgEl
      ),
      linkBox,
      table.rule ? h("div", { class: "leapp-rule" }, table.rule) : null,
      h("div", { class: "leapp-split" }, h("div", { class: "leapp-left" }, wrap), histPanel)
    ].filter(Boolean));
  }
  let items = [];
  let shownRows = [];
  let indexOf = /* @__PURE__ */ new Map();
  function computeItems() {
    ({ items, shownRows, indexOf } = tableItems(rows, columns, table, state, hay, groupKey));
    vt.setItems(items);
    count.textContent = shownRows.length === rows.length ? nouns(rows.length) : shownRows.length + " of " + nouns(rows.length);
    searchNote.textContent = state.query && !shownRows.length ? explainQuery(rows, state.query, table, hay, 0, state.onlyBad ? table.filter_label || "divergent only" : null) : "";
    const col = columns.find((c) => c.key === state.sortKey);
    sortInfo.textContent = col ? "sorted by " + col.label + (state.sortDir > 0 ? " ↑" : " ↓") : "model order";
    vt.markSorted();
  }
  function refresh(keepPlace) {
    computeItems();
    vt.invalidate();
    fitHeight();
    if (state.row && indexOf.has(state.row) && !keepPlace) vt.scrollToIndex(indexOf.get(state.row));
    else {
      if (!keepPlace) wrap.scrollTop = 0;
      vt.renderWindow(true);
    }
  }
  function setQuery(q, source) {
    state.query = q;
    if (search.value !== q) search.value = q;
    msg("");
    refresh();
    ctx.writeFragment();
  }
  function onSearchKey(e) {
    e.stopPropagation();
    if (e.key === "Enter" && shownRows.length) {
      e.preventDefault();
      ctx.select(enterTarget(shownRows, state.query, nameKey).id, null, "search");
      refocus();
    }
    if (e.key === "Escape") {
      setQuery("", "search");
      refocus();
    }
  }
  function toggleGroup(g) {
    const opening = state.collapsed.delete(g);
    if (!opening) state.collapsed.add(g);
    refresh(true);
    const r = byId.get(state.row);
    if (opening && r && groupOf(r.cells[groupKey], groupKey, state.groupDepth) === g) vt.scrollToIndex(indexOf.get(r.id));
  }
  function reveal(id, source) {
    const r = byId.get(id);
    if (!r) return;
    let changed = false;
    if (!indexOf.has(id) && state.groupBy && state.collapsed.delete(groupOf(r.cells[groupKey], groupKey, state.groupDepth))) {
      computeItems();
      changed = true;
    }
    if (!indexOf.has(id) && source !== "search") {
      state.query = "";
      search.value = "";
      state.onlyBad = false;
      filterBox.checked = false;
      computeItems();
      msg("filters cleared to show " + id);
      changed = true;
    }
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
  function msg(text) {
    msgEl.textContent = text || "";
  }
  function togglePanel(open) {
    state.panelOpen = open === void 0 ? !state.panelOpen : open;
    histPanel.style.display = state.panelOpen ? "" : "none";
    panelBtn.textContent = state.panelOpen ? "hide panel ▸" : "◂ show panel";
    if (state.panelOpen && state.row) renderHist();
    vt.renderWindow(true);
  }
  function moveRow(dir) {
    const ids = items.filter((it) => it.r).map((it) => it.r.id);
    if (!ids.length) return;
    const i = ids.indexOf(state.row);
    const j = i < 0 ? 0 : Math.min(ids.length - 1, Math.max(0, i + dir));
    ctx.select(ids[j], null, "key");
  }
  function jumpDivergent(dir, source) {
    const list = shownRows;
    if (!list.length) return;
    let i = list.findIndex((r) => r.id === state.row);
    if (i < 0) i = dir > 0 ? -1 : list.length;
    for (let j = i + dir; j >= 0 && j < list.length; j += dir) {
      if (list[j].status === jumpStatus) {
        msg("");
        ctx.select(list[j].id, null, source);
        return;
      }
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
    else if (k === "/") {
      search.focus();
    } else return;
    e.preventDefault();
    e.stopPropagation();
  }
  ctx.root.addEventListener("keydown", onKey);
  if (host.globalKeys) document.addEventListener("keydown", (e) => {
    if (e.target === document.body) onKey(e);
  });
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
    const done = (ok) => msg(ok ? "link copied" : "copy the link from the box");
    try {
      navigator.clipboard.writeText(url).then(() => done(true), () => done(false));
    } catch (e) {
      done(false);
    }
  }
  const histPlot = h("div", { class: "leapp-histplot" });
  function renderHist() {
    if (!state.panelOpen) return;
    histPanel.replaceChildren();
    const r = byId.get(state.row);
    if (!r) {
      histPanel.append(h("div", { class: "leapp-empty" }, "click a row to see its |diff| histogram"));
      return;
    }
    if (table.groups) {
      renderGroupPanel(histPanel, r, state, table, (key) => {
        state.sample = key;
        renderHist();
        if (host.onSelect) host.onSelect(r.id, key);
      });
      return;
    }
    drawRowPanel(histPanel, histPlot, r, state.sample, r.group ? groups.get(r.group) : null, view, table, {
      row: (id) => ctx.select(id, null, "picker"),
      actions: ctx.rowActions,
      sample: (key) => {
        state.sample = key;
        renderHist();
        ctx.writeFragment();
        if (host.onSelect) host.onSelect(r.id, state.sample);
        ctx.emit(r.id, state.sample, "picker");
      }
    });
  }
  return {
    refocus,
    setQuery,
    reveal,
    renderHist,
    notice: msg,
    rowIds: () => shownRows.map((r) => r.id),
    // before the first tab is shown: the link's query, the header, the rows
    init() {
      if (ctx.frag && ctx.frag.q) {
        state.query = ctx.frag.q;
        search.value = ctx.frag.q;
      }
      vt.buildHead();
      computeItems();
    },
    show() {
      fitHeight();
      if (state.row && indexOf.has(state.row)) vt.scrollToIndex(indexOf.get(state.row));
      else vt.renderWindow(true);
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
          lastW = w;
          lastH = hh;
          if (fresh) {
            fitHeight();
            if (state.row && indexOf.has(state.row)) vt.scrollToIndex(indexOf.get(state.row));
          }
          vt.renderWindow(true);
        }).observe(wrap);
      }
      if (typeof window !== "undefined") window.addEventListener("resize", () => {
        fitHeight();
        vt.renderWindow(true);
      });
    }
  };
}

// src/shared/colour.js
function badness(v, m, range) {
  if (v === null || v === void 0 || Number.isNaN(v)) return null;
  if (m.threshold !== null && m.threshold !== void 0) {
    const d = m.worse === "below" ? (1 - v) / (1 - m.threshold) : v / m.threshold;
    return d <= 0 ? -3 : Math.log10(d);
  }
  if (!range || !(v > 0)) return 0;
  return range[1] > range[0] ? (Math.log10(v) - range[0]) / (range[1] - range[0]) : 1;
}
function mix(a, b, t) {
  const p = (x2) => [1, 3, 5].map((i) => parseInt(x2.slice(i, i + 2), 16));
  const [x, y] = [p(a), p(b)];
  return "#" + x.map((c, i) => Math.round(c + (y[i] - c) * Math.max(0, Math.min(1, t))).toString(16).padStart(2, "0")).join("");
}
function badColor(b, m) {
  if (b === null) return "#f5f5f5";
  if (m.threshold === null || m.threshold === void 0) return mix("#e8eaf6", "#7e57c2", b);
  return b < 0 ? mix("#fff59d", "#c8e6c9", -b / 2) : mix("#ffb74d", "#e57373", b / 2);
}
var statusColor = (st) => st === "fail" ? "#c62828" : st === "warn" ? "#ef8f00" : st === "pass" ? "#2e7d32" : "#9e9e9e";

// src/views/replay_engine.js
var CONFIG = { displayModeBar: false, displaylogo: false, showLink: false, responsive: true };
function engineInfo(eng) {
  if (!eng) return null;
  return h(
    "div",
    { class: "leapp-engineinfo", "data-leapp-replay-engine": eng.engine },
    h(
      "table",
      { class: "leapp-kv" },
      h("thead", {}, h("tr", {}, ["node", "runs on", "build", "note"].map((x) => h("th", {}, x)))),
      h("tbody", {}, eng.nodes.map((n) => h(
        "tr",
        { "data-leapp-engine-node": n.node },
        h("td", {}, n.node),
        h("td", {}, n.runs_on),
        h("td", {}, n.source ? n.source + (n.build ? " · " + n.build : "") : "–"),
        h("td", { class: "leapp-wrap" }, n.note || "")
      )))
    ),
    kv(Object.entries(eng.timings_s || {}).map(([k, v]) => ["time " + k.replace(/_/g, " ") + " (s)", v])),
    (eng.notes || []).length ? h("ul", { class: "leapp-notes" }, eng.notes.map((n) => h("li", {}, n))) : null
  );
}
function outputsTable(run) {
  const eng = !!run.engine;
  const head = ["output", "first", "last", "max", "at step", "first step beyond tolerance", "growth / step (fitted)", "trend"].concat(eng ? ["max vs fp32", "own error max", "inherited error max"] : []).concat(["worst element"]);
  return h("div", { class: "leapp-hscroll" }, h(
    "table",
    { class: "leapp-kv leapp-kv-line", "data-leapp-replay-outputs": run.key },
    h("thead", {}, h("tr", {}, head.map((x) => h("th", {}, x)))),
    h("tbody", {}, run.outputs.map((o) => h(
      "tr",
      { "data-leapp-output": o.output },
      [
        o.output,
        fmt(o.first),
        fmt(o.last),
        fmt(o.max_abs),
        fmt(o.max_step),
        fmt(o.first_fail_step === void 0 ? o.first_fail : o.first_fail_step),
        o.growth_per_step === null || o.growth_per_step === void 0 ? "–" : "×" + fmt(o.growth_per_step),
        o.trend || (o.grows ? "grows" : "–")
      ].concat(eng ? [fmt(o.fp32_max_abs), fmt(o.own_error_max), fmt(o.inherited_error_max)] : []).concat([o.worst_element || "–"]).map((x) => h("td", {}, x))
    )))
  ));
}
function drawSplit(div, run, output, onPick) {
  clearPlot(div);
  const s = (run.split || []).find((x) => x.output === output);
  div.setAttribute("data-leapp-replay-split", run.key + "/" + output);
  if (!s) {
    div.append(h("div", { class: "leapp-empty" }, "no own / inherited split for " + output));
    return;
  }
  if (!hasPlotly()) {
    div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded"));
    return;
  }
  const ids = s.x.map((k) => run.key + "/" + k + "/" + output);
  const data = [
    {
      type: "scatter",
      mode: "lines+markers",
      name: "own: a step from the fp32 state",
      x: s.x,
      y: s.own,
      customdata: ids,
      line: { color: "#ef6c00" },
      hovertemplate: "step %{x}<br>own %{y:.3e}<extra></extra>"
    },
    {
      type: "scatter",
      mode: "lines+markers",
      name: "inherited: through the state and upstream",
      x: s.x,
      y: s.inherited,
      customdata: ids,
      line: { color: "#6a1b9a" },
      hovertemplate: "step %{x}<br>inherited %{y:.3e}<extra></extra>"
    },
    {
      type: "scatter",
      mode: "lines",
      name: "total vs fp32",
      x: s.x,
      y: s.fp32,
      customdata: ids,
      line: { color: "#9e9e9e", dash: "dot" },
      hovertemplate: "step %{x}<br>vs fp32 %{y:.3e}<extra></extra>"
    }
  ];
  const shapes = run.resets.map((k) => ({ type: "line", x0: k - 0.5, x1: k - 0.5, yref: "paper", y0: 0, y1: 1, line: { color: "#6a1b9a", dash: "dash" } }));
  const layout = {
    title: { text: plotText(output) + ": own vs inherited error per step (max |diff| vs the fp32 export)", font: { size: 12 } },
    height: 280,
    margin: { l: 60, r: 10, t: 40, b: 40 },
    shapes,
    showlegend: true,
    legend: { orientation: "h", y: -0.25 },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    xaxis: { title: { text: "step", font: { size: 10 } } },
    yaxis: { title: { text: "max |diff|", font: { size: 10 } }, rangemode: "tozero" }
  };
  globalThis.Plotly.newPlot(div, data, themed(div, layout), CONFIG);
  if (div.on) div.on("plotly_click", (ev) => {
    const p = ev.points && ev.points[0];
    if (p && p.customdata) onPick(p.customdata);
  });
}
function tapsBlock(t) {
  if (!t) return null;
  const box = h("div", { class: "leapp-tapsbox", "data-leapp-taps": t.key });
  const local = h("input", { type: "checkbox", "data-leapp-taps-local": "" });
  const heat = h("div", { class: "leapp-tapsheat", "data-leapp-taps-heatmap": t.key });
  const picked = h("div", { class: "leapp-muted", "data-leapp-taps-cell": "" }, "click a cell for that step's histogram");
  const hist = h("div", { class: "leapp-histplot", "data-leapp-taps-hist": "" });
  const first = t.first ? "first beyond nrmse " + fmt(t.max_nrmse) + ": step " + t.first.step + ", tap " + t.first.tap : "no cell beyond nrmse " + fmt(t.max_nrmse);
  box.append(...[
    h("div", { class: "leapp-sub" }, "taps of " + t.node + " at every step (tier " + t.tier + ")"),
    h(
      "div",
      { class: "leapp-toolbar" },
      h("span", { "data-leapp-taps-first": t.first ? t.first.step + "/" + t.first.tap : "" }, first),
      " ",
      h("label", {}, local, " local (the engine from the fp32 state)")
    ),
    t.note ? h("div", { class: "leapp-note" }, t.note) : null,
    heat,
    picked,
    hist
  ].filter(Boolean));
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
function heatCells(t, local) {
  const z = local ? t.local_nrmse : t.nrmse;
  const first = local ? t.first_local : t.first;
  const rule = { threshold: t.max_nrmse, worse: "above" };
  return t.steps.map((k, i) => t.taps.map((tap, j) => {
    const v = z[i] ? z[i][j] : null;
    return {
      at: k + "/" + tap,
      z: v,
      color: badColor(badness(v, rule), rule),
      first: !!first && first.step === k && first.tap === tap
    };
  }));
}
function drawHeat(div, t, local, onCell) {
  div.replaceChildren();
  const cells = heatCells(t, local);
  const title = (local ? "local " : "") + "nrmse per step and tap (✕: first beyond nrmse " + fmt(t.max_nrmse) + "; green below, red above)";
  const head = h("tr", {}, h("th", {}, "step"), t.taps.map((tap) => h("th", { class: "leapp-tapshead", title: tap }, tap)));
  const body = cells.map((row, i) => h("tr", {}, h("th", {}, String(t.steps[i])), row.map((c, j) => {
    const td = h(
      "td",
      {
        "data-leapp-taps-at": c.at,
        "data-leapp-taps-first-cell": c.first ? "true" : null,
        title: "step " + t.steps[i] + " · " + t.taps[j] + ": nrmse " + fmt(c.z),
        style: "background:" + c.color
      },
      c.first ? "✕" : ""
    );
    td.addEventListener("click", () => onCell(i, j));
    return td;
  })));
  div.append(
    h("div", { class: "leapp-sub" }, title),
    h("div", { class: "leapp-tapsscroll" }, h("table", { class: "leapp-tapsgrid" }, h("thead", {}, head), h("tbody", {}, body)))
  );
}

// src/views/deep.js
function deepColumns(e) {
  return (e && Array.isArray(e.columns) ? e.columns : []).map((c) => [c.key, c.label, c.type]);
}
function deepTable(section, rows, onPick, labelOf, entry) {
  const cols = deepColumns(entry);
  const body = h("tbody", {});
  for (const r of rows) {
    const tr = h("tr", {
      "data-leapp-row": r.id,
      "data-leapp-section": section,
      "data-leapp-status": r.status,
      class: "leapp-row leapp-" + r.status
    });
    if (onPick) tr.addEventListener("click", () => onPick(r.id));
    for (const [k, , type] of cols) {
      if (type === "status") tr.append(h("td", {}, h("span", { class: "leapp-pill leapp-" + r.status }, labelOf ? labelOf(r) : r.status)));
      else tr.append(h("td", { class: "leapp-" + type }, fmt(r.cells[k])));
    }
    body.append(tr);
  }
  if (!rows.length) body.append(h("tr", {}, h("td", { colspan: cols.length, class: "leapp-empty" }, "no rows")));
  return h("div", { class: "leapp-tablewrap leapp-deepwrap" }, h(
    "table",
    { class: "leapp-table", "data-leapp-deep-table": section },
    h("thead", {}, h("tr", {}, cols.map(([, label, type]) => h("th", { class: "leapp-" + type }, label)))),
    body
  ));
}
function deepHead(section, e, many, title) {
  return h(
    "div",
    { class: "leapp-deephead", "data-leapp-deep-status": e.status, "data-leapp-deep-graph": e.graph },
    h(
      "div",
      {},
      many ? h("b", {}, e.graph + " · ") : null,
      h("span", { class: "leapp-pill leapp-" + (e.kind || "uncompared") }, e.status),
      " ",
      title
    ),
    e.reason ? h("div", { class: "leapp-note" }, e.reason) : null,
    (e.notes || []).length ? h("ul", { class: "leapp-deepnotes" }, e.notes.map((n) => h("li", {}, n))) : null
  );
}
function selectIn(box, id) {
  for (const tr of box.querySelectorAll("tr[data-leapp-row]")) {
    const on = tr.getAttribute("data-leapp-row") === id;
    tr.classList.toggle("leapp-selected", on);
    if (on && tr.scrollIntoView) tr.scrollIntoView({ block: "nearest" });
  }
}
function selectWithElements(box, elBox, rows, id) {
  selectIn(box, id);
  const r = rows.find((x) => x.id === id);
  elBox.replaceChildren();
  const block = r && r.elements ? elementsBlock(r.elements, r.id) : null;
  if (block) {
    elBox.append(block);
    block.draw();
  }
}
function drawReplay(div, run, onPick) {
  clearPlot(div);
  if (!hasPlotly()) {
    div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded"));
    return;
  }
  const data = run.series.map((s) => ({
    type: "scatter",
    mode: "lines+markers",
    name: plotText(s.output),
    x: s.x,
    y: s.y,
    customdata: s.x.map((k) => run.key + "/" + k + "/" + s.output),
    marker: { color: s.status.map(statusColor), size: 8 },
    line: { width: 1.5 },
    hovertemplate: plotText(s.output) + "<br>step %{x}<br>max |diff| %{y:.3e}<extra></extra>"
  }));
  const shapes = [], annotations = [];
  for (const k of run.resets) {
    shapes.push({ type: "line", x0: k - 0.5, x1: k - 0.5, yref: "paper", y0: 0, y1: 1, line: { color: "#6a1b9a", dash: "dash" } });
    annotations.push({ x: k - 0.5, yref: "paper", y: 1.02, text: "reset", showarrow: false, font: { size: 10, color: "#6a1b9a" } });
  }
  if (run.first_divergent) {
    shapes.push({
      type: "line",
      x0: run.first_divergent.step,
      x1: run.first_divergent.step,
      yref: "paper",
      y0: 0,
      y1: 1,
      line: { color: "#c62828", dash: "dot" }
    });
  }
  const layout = {
    title: { text: "max |exported − reference| per step (dashed: episode reset; dotted: first divergent step)", font: { size: 12 } },
    height: 300,
    margin: { l: 60, r: 10, t: 40, b: 40 },
    shapes,
    annotations,
    showlegend: true,
    legend: { orientation: "h", y: -0.2 },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    xaxis: { title: { text: "step", font: { size: 10 } }, dtick: 1 },
    yaxis: { title: { text: "max |diff|", font: { size: 10 } }, rangemode: "tozero" }
  };
  globalThis.Plotly.newPlot(div, data, themed(div, layout), { displayModeBar: false, displaylogo: false, showLink: false, responsive: true });
  if (div.on) div.on("plotly_click", (ev) => {
    const p = ev.points && ev.points[0];
    if (p && p.customdata) onPick(p.customdata);
  });
}
function renderReplayPanel(panel, entries, many) {
  const shows = [];
  for (const e of entries) {
    panel.append(deepHead("replay", e, many, "sequential replay, tier " + (e.tier || "?") + " (rtol " + fmt(e.rtol) + ", atol " + fmt(e.atol) + ")"));
    if (!e.runs.length) continue;
    const runLabel = (r) => (r.engine ? r.engine + " · " : "") + "tier (" + r.tier + ") · " + r.status;
    const picker = h("select", { "data-leapp-replay-run": e.graph }, e.runs.map((r) => h("option", { value: r.key }, runLabel(r))));
    const info = h("div", { class: "leapp-deepinfo" });
    const plot = h("div", { class: "leapp-replayplot", "data-leapp-replay-plot": "" });
    const splitBox = h("div", {});
    const box = h("div", {});
    const elBox = h("div", { class: "leapp-deepelements" });
    const tapsBox = h("div", {});
    const engines = e.engines || [];
    for (const eng of engines) if (!e.runs.some((r) => r.engine === eng.engine)) {
      panel.append(h("div", { class: "leapp-note", "data-leapp-replay-engine": eng.engine }, eng.engine + ": " + eng.status + (eng.reason ? " · " + eng.reason : "")));
    }
    panel.append(h(
      "div",
      { class: "leapp-toolbar" },
      h("label", {}, "sequence ", picker),
      h("span", { class: "leapp-muted" }, " click a point to find its row")
    ), info, plot, splitBox, box, elBox, tapsBox);
    const show = () => {
      const run = e.runs.find((r) => r.key === picker.value) || e.runs[0];
      const eng = run.engine ? engines.find((x) => x.engine === run.engine) : null;
      plot.setAttribute("data-leapp-replay-plot", run.key);
      info.replaceChildren(...[
        h("div", { class: "leapp-sub" }, run.title),
        kv([
          ["status", run.status],
          ["steps", run.steps],
          run.seed !== null && run.seed !== void 0 ? ["seed", run.seed] : null,
          ["episode resets at", run.resets.length ? run.resets.join(", ") : "–"],
          run.first_divergent ? ["first divergent", "step " + run.first_divergent.step + " · " + run.first_divergent.output] : null,
          ...run.breaks.map(([k, ks]) => ["fed back by Python, not the graph", k + " at " + ks.join(", ")]),
          ...(run.not_comparable || []).map(([k, ks]) => ["not comparable (LEAPP recorded no value)", k + " at " + ks.join(", ")]),
          run.reason ? ["reason", run.reason] : null
        ]),
        engineInfo(eng),
        run.notes.length ? h("ul", { class: "leapp-notes" }, run.notes.map((n) => h("li", {}, n))) : null,
        outputsTable(run)
      ].filter(Boolean));
      const pick = (id) => selectWithElements(box, elBox, run.rows, id);
      box.replaceChildren(deepTable("replay", run.rows, pick, null, run));
      elBox.replaceChildren();
      drawReplay(plot, run, pick);
      splitBox.replaceChildren();
      if (run.engine && (run.split || []).length) {
        const outs = run.split.map((x) => x.output);
        const sel = h("select", { "data-leapp-split-output": run.key }, outs.map((o) => h("option", { value: o }, o)));
        const div = h("div", { class: "leapp-replayplot" });
        splitBox.append(h("div", { class: "leapp-toolbar" }, h("label", {}, "own vs inherited error of ", sel)), div);
        const drawIt = () => drawSplit(div, run, sel.value, pick);
        sel.addEventListener("change", drawIt);
        drawIt();
      }
      tapsBox.replaceChildren();
      const tb = eng && eng.taps && eng.taps.tier === run.tier ? tapsBlock(eng.taps) : null;
      if (tb) {
        tapsBox.append(tb);
        tb.draw();
      }
    };
    picker.addEventListener("change", show);
    shows.push(show);
  }
  return () => shows.forEach((f) => f());
}
function renderParityPanel(panel, entries, many) {
  for (const e of entries) {
    panel.append(deepHead("parity", e, many, "exported vs original on " + e.n + " fresh inputs (seed " + fmt(e.seed) + "; rtol " + fmt(e.rtol) + ", atol " + fmt(e.atol) + ")"));
    if (e.inputs.length) panel.append(
      h("div", { class: "leapp-sub" }, "how the fresh inputs were drawn (scales " + e.scales.join(", ") + ", shift " + fmt(e.shift) + ")"),
      h(
        "table",
        { class: "leapp-kv" },
        h("thead", {}, h("tr", {}, ["input", "shape", "dtype", "mean", "std", "rule"].map((x) => h("th", {}, x)))),
        h("tbody", {}, e.inputs.map((i) => h(
          "tr",
          {},
          h("td", {}, i.name),
          h("td", {}, shapeText(i.shape)),
          h("td", {}, i.dtype),
          h("td", {}, fmt(i.mean)),
          h("td", {}, fmt(i.std)),
          h("td", {}, i.rule)
        )))
      )
    );
    if (e.outputs.length) panel.append(
      h("div", { class: "leapp-sub" }, "per output"),
      h(
        "table",
        { class: "leapp-kv", "data-leapp-parity-outputs": e.graph },
        h("thead", {}, h("tr", {}, ["output", "failed", "max", "worst input", "min atol"].map((x) => h("th", {}, x)))),
        h("tbody", {}, e.outputs.map((o) => h(
          "tr",
          {},
          h("td", {}, o.output),
          h("td", {}, o.failed + "/" + o.samples),
          h("td", {}, fmt(o.max_abs)),
          h("td", {}, fmt(o.worst_sample)),
          h("td", {}, fmt(o.min_atol))
        )))
      )
    );
    const box = h("div", {});
    const elBox = h("div", { class: "leapp-deepelements" });
    box.append(deepTable("parity", e.rows, (id) => selectWithElements(box, elBox, e.rows, id), null, e));
    panel.append(box, elBox);
  }
}
function renderAdaptersPanel(panel, entries, many) {
  for (const e of entries) {
    panel.append(deepHead("adapters", e, many, "each leapp.FunctionPatch adapter against the function it replaces (rtol " + fmt(e.rtol) + ", atol " + fmt(e.atol) + ")"));
    panel.append(h(
      "table",
      { class: "leapp-kv" },
      h("thead", {}, h("tr", {}, ["function", "adapter", "node", "calls traced", "result", "max |diff|", "worst case", "error"].map((x) => h("th", {}, x)))),
      h("tbody", {}, e.adapters.map((a) => h(
        "tr",
        { "data-leapp-adapter": a.function, "data-leapp-status": a.status },
        h("td", {}, a.function),
        h("td", {}, a.replacement),
        h("td", {}, a.node || "–"),
        h("td", {}, fmt(a.calls)),
        h("td", {}, h("span", { class: "leapp-pill leapp-" + a.status }, a.status)),
        h("td", {}, fmt(a.max_abs)),
        h("td", {}, a.worst_case || "–"),
        h("td", {}, a.error || "")
      )))
    ));
    const box = h("div", {});
    box.append(deepTable("adapters", e.rows, (id) => selectIn(box, id), null, e));
    panel.append(box);
  }
}
function renderExportersPanel(panel, entries, many) {
  for (const e of entries) {
    panel.append(deepHead("exporters", e, many, "each node with each backend, in fresh sessions (advice only: nothing was changed in your code; the body ran again " + e.reruns + "×)"));
    if (e.advice.length) panel.append(h("ul", { class: "leapp-advice" }, e.advice.map((a, i) => h("li", { "data-leapp-advice": e.nodes[i] || "" }, a))));
    const byKey = new Map(e.rows.map((r) => [r.cells.node + "/" + r.id.split("/").pop(), r]));
    if (e.nodes.length) panel.append(h(
      "table",
      { class: "leapp-table leapp-matrix", "data-leapp-exporter-matrix": e.graph },
      h("thead", {}, h("tr", {}, h("th", {}, "node"), e.backends.map((b) => h("th", {}, b)))),
      h("tbody", {}, e.nodes.map((n) => h("tr", {}, h("td", {}, n), e.backends.map((b) => {
        const r = byKey.get(n + "/" + b);
        return h(
          "td",
          { "data-leapp-exporter": n + "/" + b, "data-leapp-outcome": r ? r.outcome : "" },
          r ? h("span", { class: "leapp-pill leapp-" + r.status, title: r.cells.error || "" }, r.outcome + (r.cells.backend.endsWith("(yours)") ? " ★" : "")) : "–"
        );
      }))))
    ));
    const box = h("div", {});
    box.append(deepTable("exporters", e.rows, (id) => selectIn(box, id), (r) => r.outcome, e));
    panel.append(box);
  }
}
function renderIsolationPanel(panel, entries, many) {
  for (const e of entries) {
    panel.append(deepHead("isolation", e, many, "the body traced again with parts of LEAPP turned off (it ran again " + e.reruns + "×)"));
    if (e.decision) panel.append(h(
      "div",
      { class: "leapp-decision", "data-leapp-decision": e.decision },
      h("b", {}, "decision: " + e.decision),
      " (row " + fmt(e.rule) + ") · ",
      e.explanation || ""
    ));
    const box = h("div", {});
    box.append(deepTable("isolation", e.rows, (id) => selectIn(box, id), (r) => r.cells.verdict || (r.cells.status === "not run" ? "not run" : r.status), e));
    panel.append(
      box,
      h("div", { class: "leapp-sub" }, "decision table (the first matching row decides)"),
      h(
        "table",
        { class: "leapp-kv leapp-decisiontable" },
        h("thead", {}, h("tr", {}, ["row", "outcome pattern", "decision"].map((x) => h("th", {}, x)))),
        h("tbody", {}, e.table.map((t) => h(
          "tr",
          { "data-leapp-decision-row": t.row, "data-leapp-matched": t.matched ? "true" : null, class: t.matched ? "leapp-matched" : null },
          h("td", {}, t.row),
          h("td", {}, t.pattern),
          h("td", {}, t.decision)
        )))
      )
    );
  }
}
var DRAW = {
  replay: renderReplayPanel,
  parity: renderParityPanel,
  adapters: renderAdaptersPanel,
  exporters: renderExportersPanel,
  isolation: renderIsolationPanel
};
var DEEP_SECTIONS = Object.keys(DRAW);
function renderDeepSection(name, view, panel) {
  const deep = view.deep || {};
  if (!panel || !deep[name]) return void 0;
  return DRAW[name](panel, deep[name], (view.graphs || []).length > 1);
}
function renderDeep(view, panels) {
  const hooks = {};
  for (const name of DEEP_SECTIONS) {
    const onShow = renderDeepSection(name, view, panels[name]);
    if (onShow) hooks[name] = onShow;
  }
  return hooks;
}
function deepTab(name) {
  return (ctx, panel) => {
    if (!(ctx.view.deep || {})[name]) return null;
    const onShow = renderDeepSection(name, ctx.view, panel);
    return onShow ? { show: onShow } : {};
  };
}

// src/shared/graphnav.js
var READABLE = 0.6;
function svgLength(v) {
  const m = /^([\d.]+)\s*(pt|px)?$/.exec(String(v || "").trim());
  return m ? Number(m[1]) * (m[2] === "pt" ? 4 / 3 : 1) : null;
}
function graphNav(opts) {
  const view = h("div", {
    class: "leapp-graph leapp-graphview",
    tabindex: "0",
    "data-lm-suppress-shortcuts": "true",
    "data-leapp-graph-view": ""
  });
  const search = h("input", {
    type: "search",
    class: "leapp-graphsearch",
    placeholder: "find node",
    "data-leapp-graph-search": "",
    "data-lm-suppress-shortcuts": "true"
  });
  const count = h("span", { class: "leapp-muted", "data-leapp-graph-count": "" });
  const btn = (what, label, title, fn) => h("button", { class: "leapp-btn", "data-leapp-graph-zoom": what, title, on: { click: fn } }, label);
  const tools = h(
    "span",
    { class: "leapp-graphtools" },
    btn("in", "+", "zoom in (wheel, +)", () => zoomAt(1.4)),
    btn("out", "−", "zoom out (wheel, -)", () => zoomAt(1 / 1.4)),
    btn("fit", "fit", "fit the whole graph (f)", () => fit()),
    search,
    count
  );
  let svg = null, nat = null, cx = 0, cy = 0, k = 1, ready = false, pending = null, drag = null, dragged = false;
  function size() {
    return [view.clientWidth, view.clientHeight];
  }
  function apply() {
    const [W, H] = size();
    if (!svg || !W || !H) return;
    svg.setAttribute("viewBox", [cx - W / 2 / k, cy - H / 2 / k, W / k, H / k].map((x) => x.toFixed(2)).join(" "));
    view.setAttribute("data-leapp-graph-zoom", (k / nat.k0).toFixed(3));
  }
  function fitK() {
    const [W, H] = size();
    return Math.min((W - 16) / nat.w, (H - 16) / nat.h, nat.k0);
  }
  function fit() {
    if (!nat) return;
    k = fitK();
    cx = nat.x + nat.w / 2;
    cy = nat.y + nat.h / 2;
    apply();
  }
  function zoomAt(f, px, py) {
    if (!nat) return;
    const [W, H] = size();
    if (px === void 0) {
      px = W / 2;
      py = H / 2;
    }
    const ux = cx + (px - W / 2) / k, uy = cy + (py - H / 2) / k;
    const k2 = Math.min(nat.k0 * 4, Math.max(Math.min(fitK(), nat.k0) * 0.5, k * f));
    cx = ux - (px - W / 2) / k2;
    cy = uy - (py - H / 2) / k2;
    k = k2;
    apply();
  }
  function bbox(el) {
    const m = svg && svg.getScreenCTM(), me = el.getScreenCTM && el.getScreenCTM();
    if (!m || !me) return null;
    const b = el.getBBox(), t = m.inverse().multiply(me);
    const ps = [[b.x, b.y], [b.x + b.width, b.y], [b.x, b.y + b.height], [b.x + b.width, b.y + b.height]].map(([x, y]) => new DOMPoint(x, y).matrixTransform(t));
    const xs = ps.map((p) => p.x), ys = ps.map((p) => p.y);
    return { x: Math.min(...xs), y: Math.min(...ys), w: Math.max(...xs) - Math.min(...xs), h: Math.max(...ys) - Math.min(...ys) };
  }
  function centerOn(el) {
    if (!el) return;
    const [W, H] = size();
    if (!ready || !W || !H) {
      pending = el;
      return;
    }
    const b = bbox(el);
    if (!b) {
      pending = el;
      return;
    }
    if (k < READABLE * nat.k0) k = nat.k0;
    cx = b.x + b.w / 2;
    cy = b.y + b.h / 2;
    apply();
  }
  function initial() {
    fit();
    if (k >= READABLE * nat.k0) return;
    const f = opts.focus && opts.focus();
    k = nat.k0;
    if (f) centerOn(f);
    else {
      const [W, H] = size();
      cx = nat.x + W / 2 / k;
      cy = nat.y + H / 2 / k;
      apply();
    }
  }
  function shown() {
    const [W, H] = size();
    if (!W || !H) return;
    if (opts.onVisible) opts.onVisible();
    if (!svg) return;
    if (!ready) {
      ready = true;
      initial();
    } else apply();
    if (pending) {
      const el = pending;
      pending = null;
      centerOn(el.isConnected ? el : null);
    }
  }
  if (typeof ResizeObserver !== "undefined") new ResizeObserver(shown).observe(view);
  else requestAnimationFrame(shown);
  view.addEventListener("pointerdown", (e) => {
    if (e.button === 0) drag = { x: e.clientX, y: e.clientY, cx, cy, id: e.pointerId, moved: false };
  });
  view.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 4) return;
    if (!drag.moved) {
      drag.moved = true;
      view.setPointerCapture(drag.id);
      view.classList.add("leapp-dragging");
    }
    cx = drag.cx - dx / k;
    cy = drag.cy - dy / k;
    apply();
  });
  const endDrag = () => {
    if (drag && drag.moved) {
      dragged = true;
      setTimeout(() => {
        dragged = false;
      }, 0);
    }
    drag = null;
    view.classList.remove("leapp-dragging");
  };
  view.addEventListener("pointerup", endDrag);
  view.addEventListener("pointercancel", endDrag);
  view.addEventListener("click", (e) => {
    if (dragged) {
      e.stopPropagation();
      e.preventDefault();
    }
  }, true);
  view.addEventListener("wheel", (e) => {
    if (!nat) return;
    e.preventDefault();
    const r = view.getBoundingClientRect(), dy = e.deltaY * (e.deltaMode === 1 ? 16 : 1);
    zoomAt(Math.exp(-dy * 15e-4), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  view.addEventListener("keydown", (e) => {
    const [W, H] = size(), step = 60 / k;
    const act = {
      "+": () => zoomAt(1.4),
      "=": () => zoomAt(1.4),
      "-": () => zoomAt(1 / 1.4),
      f: fit,
      0: fit,
      ArrowLeft: () => {
        cx -= step;
        apply();
      },
      ArrowRight: () => {
        cx += step;
        apply();
      },
      ArrowUp: () => {
        cy -= step;
        apply();
      },
      ArrowDown: () => {
        cy += step;
        apply();
      }
    }[e.key];
    if (!act || !W || !H) return;
    e.preventDefault();
    e.stopPropagation();
    act();
  });
  let matches = [], mi = -1, lastQ = "";
  function find(step) {
    const q = search.value.trim().toLowerCase();
    if (q !== lastQ) {
      lastQ = q;
      matches = q ? opts.find(q) : [];
      mi = -1;
      opts.mark(matches);
    }
    if (!matches.length) {
      count.textContent = q ? "no match" : "";
      return;
    }
    mi = (mi + step + matches.length) % matches.length;
    count.textContent = mi + 1 + " of " + matches.length;
    opts.show(matches[mi]);
  }
  search.addEventListener("input", () => find(1));
  search.addEventListener("keydown", (e) => {
    e.stopPropagation();
    if (e.key === "Enter") {
      e.preventDefault();
      find(e.shiftKey ? -1 : 1);
    }
  });
  return {
    el: h("div", { class: "leapp-graphnav" }, h("div", { class: "leapp-toolbar leapp-graphbar" }, tools), view),
    view,
    tools,
    centerOn,
    fit,
    // show `el` (an <svg>) in the viewport; keep=true keeps zoom and centre (a redraw of the same graph)
    attach(el, keep) {
      const vb = el.viewBox && el.viewBox.baseVal;
      const w = vb && vb.width ? vb.width : svgLength(el.getAttribute("width")) || 100;
      const hgt = vb && vb.height ? vb.height : svgLength(el.getAttribute("height")) || 100;
      const px = svgLength(el.getAttribute("width"));
      nat = { x: vb && vb.width ? vb.x : 0, y: vb && vb.height ? vb.y : 0, w, h: hgt, k0: px ? px / w : 1 };
      el.setAttribute("width", "100%");
      el.setAttribute("height", "100%");
      el.setAttribute("preserveAspectRatio", "xMidYMid meet");
      if (el.parentNode !== view) view.replaceChildren(el);
      svg = el;
      if (!view.style.height) view.style.height = Math.round(Math.max(140, Math.min(560, nat.h * nat.k0 + 24))) + "px";
      if (!keep) ready = false;
      shown();
    }
  };
}
function svgGraph(svgText, focus) {
  let nodes = [];
  const text = (el) => el.hasAttribute("data-leapp-io") ? [...el.querySelectorAll("text")].map((t) => t.textContent).join(" ") : ((el.querySelector("title") || {}).textContent || "") + " " + (el.getAttribute("data-leapp-node") || el.getAttribute("data-leapp-fx") || "");
  const nav = graphNav({
    find: (q) => nodes.filter((el) => text(el).toLowerCase().includes(q)),
    mark: (ms) => {
      const s = new Set(ms);
      for (const el of nodes) {
        el.classList.toggle("leapp-match", s.has(el));
        el.classList.remove("leapp-current");
      }
    },
    show: (el) => {
      for (const x of nodes) x.classList.toggle("leapp-current", x === el);
      nav.centerOn(el);
    },
    focus: () => nav.view.querySelector(focus)
  });
  setSvg(nav.view, svgText);
  const svg = nav.view.querySelector("svg");
  if (svg) {
    nodes = [...svg.querySelectorAll("[data-leapp-node], [data-leapp-fx], [data-leapp-io]")];
    nav.attach(svg);
  }
  return nav;
}

// src/views/engine_graph.js
function accuracyGraph(panel, G, table, rowsById, hooks) {
  const nodes = G.nodes || [], groups = new Map((G.groups || []).map((g) => [g.id, g]));
  if (!nodes.length) {
    panel.append(h("div", { class: "leapp-note" }, G.note || "no graph was stored for this run"));
    return { showRow() {
    } };
  }
  const open = new Set(G.open || []);
  const metrics = G.metrics || [];
  let metric = metrics[0] || null;
  const rowNode = /* @__PURE__ */ new Map();
  nodes.forEach((n, i) => n.rows.forEach((r) => {
    if (!rowNode.has(r)) rowNode.set(r, i);
  }));
  const labels = table.status_labels || {};
  let selNode = null, selRow = null, marked = /* @__PURE__ */ new Set(), current = null, dirty = true;
  let unitEls = /* @__PURE__ */ new Map(), unitsNow = /* @__PURE__ */ new Map();
  const info = h("div", { class: "leapp-graphinfo", "data-leapp-graph-info": "" });
  const chain = (gid) => {
    const out = [];
    while (gid) {
      out.unshift(gid);
      gid = (groups.get(gid) || {}).parent || null;
    }
    return out;
  };
  const unitOf = (i) => {
    for (const g of chain(nodes[i].group)) if (!open.has(g)) return "g:" + g;
    return "n:" + i;
  };
  const rowOf = (id) => rowsById.get(id);
  const value = (r) => metric && r ? r.cells[metric.key] : null;
  let range = null;
  function setRange() {
    const vs = [];
    for (const n of nodes) for (const id of n.rows) {
      const v = value(rowOf(id));
      if (v > 0) vs.push(Math.log10(v));
    }
    range = vs.length ? [Math.min(...vs), Math.max(...vs)] : null;
  }
  function primary(ids) {
    let best = null, bb = -Infinity;
    for (const id of ids) {
      const r = rowOf(id);
      if (!r) continue;
      const b = (r.status === "fail" ? 100 : 0) + (badness(value(r), metric || {}, range) ?? -50);
      if (best === null || b > bb) {
        best = id;
        bb = b;
      }
    }
    return best;
  }
  const nav = graphNav({
    find: (q) => nodes.map((n, i) => [n, i]).filter(([n]) => (n.name + " " + n.op + " " + (n.scope || "") + " " + n.rows.join(" ")).toLowerCase().includes(q)).map(([, i]) => i),
    mark: (ms) => {
      marked = new Set(ms);
      current = null;
      paint();
    },
    show: (i) => {
      current = i;
      reveal(i);
      paint();
      nav.centerOn(elOf(i));
    },
    focus: () => selNode !== null ? elOf(selNode) : null,
    onVisible: () => {
      if (dirty) render();
    }
  });
  const msel = h(
    "select",
    { "data-leapp-graph-metric": "", on: { change: (e) => {
      metric = metrics.find((m) => m.key === e.target.value);
      setRange();
      paint();
      legend();
    } } },
    metrics.map((m) => h("option", { value: m.key }, m.label))
  );
  const legendBox = h("span", { class: "leapp-graphlegend" });
  nav.tools.append(
    h("label", {}, "colour ", msel),
    legendBox,
    h("button", { class: "leapp-btn", "data-leapp-graph-unfold": "", title: "unfold every module scope", on: { click: () => {
      for (const g of groups.keys()) open.add(g);
      render(false);
    } } }, "unfold all"),
    h("button", { class: "leapp-btn", "data-leapp-graph-fold": "", title: "fold every module scope into one box", on: { click: () => {
      open.clear();
      render(false);
    } } }, "fold all")
  );
  nav.view.style.height = "min(70vh, 640px)";
  const head = h(
    "div",
    { class: "leapp-muted" },
    (G.source === "prepared" ? "the prepared ONNX (this engine has no ONNX graph): " : "the engine's ONNX graph: ") + (G.file || "") + " · " + nodes.filter((n) => n.kind === "op").length + " nodes" + Object.entries(G.left_out || {}).map(([why, n]) => " · " + n + " " + why + " nodes left out").join("") + " · fill: the row's metric against the rule (a diverged row at least at the threshold); red outline: diverged · click a node to select its row, a box to unfold its scope, a band's label to fold it"
  );
  panel.append(head, ...G.note ? [h("div", { class: "leapp-note" }, G.note)] : [], nav.el, info);
  setRange();
  legend();
  function legend() {
    legendBox.replaceChildren();
    if (!metric) return;
    const th = metric.threshold;
    const stops = th !== null && th !== void 0 ? [-2, -1, -1e-3, 0, 1, 2] : [0, 0.5, 1];
    const grad = "linear-gradient(to right, " + stops.map((b) => badColor(b, metric)).join(", ") + ")";
    const at = (b) => metric.worse === "below" ? 1 - (1 - th) * 10 ** b : th * 10 ** b;
    const ticks = th !== null && th !== void 0 ? [fmt(at(-2), metric.type), fmt(th, metric.type) + " (rule)", fmt(at(2), metric.type)] : range ? [fmt(10 ** range[0], metric.type), "no rule threshold", fmt(10 ** range[1], metric.type)] : ["", "no values", ""];
    legendBox.append(
      h("span", { class: "leapp-legendbar", style: "background:" + grad }),
      h("span", { class: "leapp-legendticks" }, ticks.map((t) => h("span", {}, t)))
    );
  }
  function reveal(i) {
    let changed = false;
    for (const g of chain(nodes[i].group)) if (!open.has(g)) {
      open.add(g);
      changed = true;
    }
    if (changed) {
      dirty = true;
      if (nav.view.clientWidth) render(true);
    }
  }
  function elOf(i) {
    return unitEls.get(unitOf(i)) || null;
  }
  function nodeTitle(n) {
    const lines = [n.name + " · " + n.op + (n.scope ? " · " + n.scope : "")];
    for (const id of n.rows.slice(0, 6)) {
      const r = rowOf(id);
      if (!r) continue;
      lines.push(id + ": " + (labels[r.status] || r.status) + (metric ? " · " + metric.label + " " + fmt(value(r), metric.type) : "") + (r.reason ? " (" + r.reason + ")" : ""));
    }
    if (n.rows.length > 6) lines.push("… " + (n.rows.length - 6) + " more rows");
    if (n.kind === "op" && !n.rows.length) lines.push("not tapped: no row");
    return lines.join("\n");
  }
  function render(keep) {
    dirty = false;
    if (typeof globalThis.dagre === "undefined") {
      nav.view.replaceChildren(h("div", { class: "leapp-empty" }, "the dagre layout library is not loaded"));
      return;
    }
    const units = /* @__PURE__ */ new Map();
    nodes.forEach((n, i) => {
      const key = unitOf(i);
      if (!units.has(key)) units.set(key, { key, members: [], group: key.startsWith("g:") ? key.slice(2) : null });
      units.get(key).members.push(i);
    });
    const g = new globalThis.dagre.graphlib.Graph();
    g.setGraph({
      rankdir: "TB",
      nodesep: 18,
      ranksep: 26,
      edgesep: 8,
      marginx: 12,
      marginy: 12,
      ranker: units.size > 150 ? "longest-path" : "network-simplex"
    });
    g.setDefaultEdgeLabel(() => ({}));
    for (const u of units.values()) {
      if (u.group) {
        const ids = u.members.flatMap((i) => nodes[i].rows).filter((id) => rowOf(id));
        const fail = ids.filter((id) => rowOf(id).status === "fail").length;
        u.title = "▸ " + groups.get(u.group).label;
        u.sub = u.members.length + " nodes" + (ids.length ? " · " + fail + "/" + ids.length + " diverged" : "");
      } else {
        const n = nodes[u.members[0]];
        u.title = n.op;
        u.sub = n.rows.length ? n.rows[0] + (n.rows.length > 1 ? " +" + (n.rows.length - 1) : "") : n.name;
      }
      const cut = (t) => t.length > 34 ? t.slice(0, 33) + "…" : t;
      u.title = cut(u.title);
      u.sub = cut(u.sub);
      g.setNode(u.key, { width: Math.max(64, u.title.length * 6.6 + 18, u.sub.length * 5.6 + 18), height: 34 });
    }
    const edges = /* @__PURE__ */ new Set();
    nodes.forEach((n, i) => {
      for (const j of n.inputs) {
        const a = unitOf(j), b = unitOf(i);
        if (a !== b && !edges.has(a + "\n" + b)) {
          edges.add(a + "\n" + b);
          g.setEdge(a, b);
        }
      }
    });
    globalThis.dagre.layout(g);
    const W = g.graph().width || 100, H = g.graph().height || 100;
    const mid = "leapp-acc-arrow-" + nextSvgSerial();
    const svg = svgEl(
      "svg",
      { viewBox: "0 0 " + W.toFixed(1) + " " + H.toFixed(1), width: W.toFixed(1), height: H.toFixed(1), class: "leapp-accgraph" },
      svgEl("defs", {}, svgEl(
        "marker",
        { id: mid, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" },
        svgEl("path", { d: "M0,0 L10,5 L0,10 z", fill: "#78909c" })
      ))
    );
    const bands = svgEl("g", { class: "leapp-bands" });
    const openGroups = [...open].filter((gid) => groups.has(gid) && chain(gid).every((a) => open.has(a)));
    openGroups.sort((a, b) => groups.get(a).depth - groups.get(b).depth);
    const below = /* @__PURE__ */ new Map();
    for (const gid of openGroups) for (const a of chain(gid)) below.set(a, Math.max(below.get(a) || 0, groups.get(gid).depth - groups.get(a).depth));
    for (const gid of openGroups) {
      let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
      for (const u of units.values()) {
        const i = u.members[0];
        if (!chain(nodes[i].group).includes(gid)) continue;
        const p = g.node(u.key);
        x0 = Math.min(x0, p.x - p.width / 2);
        x1 = Math.max(x1, p.x + p.width / 2);
        y0 = Math.min(y0, p.y - p.height / 2);
        y1 = Math.max(y1, p.y + p.height / 2);
      }
      if (!Number.isFinite(x0)) continue;
      const pad = 5 + 7 * (below.get(gid) || 0), gr = groups.get(gid);
      bands.append(svgEl(
        "g",
        { class: "leapp-band", "data-leapp-scope-open": gid },
        svgEl("title", {}, gid + " · " + gr.size + " nodes · click the label to fold into one box"),
        svgEl("rect", { x: x0 - pad, y: y0 - pad - 11, width: x1 - x0 + 2 * pad, height: y1 - y0 + 2 * pad + 11, rx: 6 }),
        svgEl("text", { x: x0 - pad + 5, y: y0 - pad - 2, class: "leapp-bandlabel" }, "▾ " + gr.label)
      ));
    }
    svg.append(bands);
    const eg = svgEl("g", { class: "leapp-edges" });
    for (const e of g.edges()) {
      const pts = g.edge(e).points || [];
      if (!pts.length) continue;
      const la = units.get(e.v), lb = units.get(e.w);
      eg.append(svgEl(
        "path",
        { d: "M" + pts.map((p) => p.x.toFixed(1) + "," + p.y.toFixed(1)).join(" L"), "marker-end": "url(#" + mid + ")" },
        svgEl("title", {}, (la.group || nodes[la.members[0]].name) + " → " + (lb.group || nodes[lb.members[0]].name))
      ));
    }
    svg.append(eg);
    unitEls = /* @__PURE__ */ new Map();
    const ng = svgEl("g", { class: "leapp-nodes" });
    for (const u of units.values()) {
      const p = g.node(u.key), x = p.x - p.width / 2, y = p.y - p.height / 2;
      const n = u.group ? null : nodes[u.members[0]];
      const el = u.group ? svgEl(
        "g",
        { class: "leapp-gunit leapp-ggroup", "data-leapp-scope": u.group },
        svgEl("title", {}),
        svgEl("rect", { x: x + 3, y: y + 3, width: p.width, height: p.height, rx: 5, class: "leapp-stack" }),
        svgEl("rect", { x, y, width: p.width, height: p.height, rx: 5, class: "leapp-box" })
      ) : svgEl(
        "g",
        { class: "leapp-gunit leapp-gnode leapp-k-" + n.kind, "data-leapp-node": n.name },
        svgEl("title", {}),
        svgEl("rect", { x, y, width: p.width, height: p.height, rx: n.kind === "op" ? 5 : 16, class: "leapp-box" })
      );
      el.append(svgEl("text", { x: x + 8, y: y + 14, class: "leapp-gtitle" }, u.title), svgEl("text", { x: x + 8, y: y + 27, class: "leapp-gsub" }, u.sub));
      el.addEventListener("click", () => {
        if (u.group) {
          open.add(u.group);
          render(true);
          nav.centerOn(elOf(u.members[0]));
          return;
        }
        const i = u.members[0], row = primary(nodes[i].rows);
        selNode = i;
        if (row) hooks.select(row);
        else {
          selRow = null;
          paint();
          describe();
        }
      });
      u.el = el;
      unitEls.set(u.key, el);
      ng.append(el);
    }
    svg.append(ng);
    for (const b of bands.children) {
      const gid = b.getAttribute("data-leapp-scope-open");
      b.querySelector("text").addEventListener("click", (ev) => {
        ev.stopPropagation();
        for (const x of [...open]) if (chain(x).includes(gid)) open.delete(x);
        render(true);
        nav.centerOn(unitEls.get("g:" + gid));
      });
    }
    unitsNow = units;
    nav.attach(svg, keep);
    paint();
  }
  function paint() {
    const selUnit = selNode !== null ? unitOf(selNode) : null;
    const curUnit = current !== null ? unitOf(current) : null;
    const markedUnits = new Set([...marked].map(unitOf));
    for (const u of unitsNow.values()) {
      const el = u.el, ids = u.members.flatMap((i) => nodes[i].rows);
      let worst = null, fail = 0, judged = 0;
      const local = !!(metric && metric.key && metric.key.startsWith("local_"));
      const failed = (r) => local ? r.local_status === "fail" : r.status === "fail";
      for (const id of ids) {
        const r = rowOf(id);
        if (!r) continue;
        if (failed(r)) fail++;
        if (r.status !== "uncompared") judged++;
        let b = badness(value(r), metric || {}, range);
        if (failed(r) && metric && metric.threshold !== null && metric.threshold !== void 0) b = Math.max(b ?? 0, 0);
        if (b !== null && (worst === null || b > worst)) worst = b;
      }
      const st = fail ? "fail" : judged ? "pass" : ids.some((id) => rowOf(id)) ? "uncompared" : "none";
      el.setAttribute("data-leapp-status", st);
      const pr = u.group ? null : primary(ids);
      if (pr) el.setAttribute("data-leapp-node-row", pr);
      else el.removeAttribute("data-leapp-node-row");
      const box = el.querySelector(".leapp-box");
      const isIo = !u.group && nodes[u.members[0]].kind !== "op";
      box.setAttribute("fill", isIo ? "#e3f2fd" : st === "none" ? "#ffffff" : badColor(worst, metric || {}));
      el.classList.toggle("leapp-node-selected", u.key === selUnit);
      el.classList.toggle("leapp-match", markedUnits.has(u.key));
      el.classList.toggle("leapp-current", u.key === curUnit);
      el.querySelector("title").textContent = u.group ? u.group + " · " + u.members.length + " nodes · " + ids.length + " rows" + (fail ? ", " + fail + " diverged" : "") + (metric && worst !== null ? " · worst " + metric.label + " in it" : "") + " · click to unfold" : nodeTitle(nodes[u.members[0]]);
    }
  }
  function describe() {
    info.replaceChildren();
    const r = selRow ? rowOf(selRow) : null;
    const n = selNode !== null ? nodes[selNode] : null;
    if (!r && !n) return;
    if (r) info.append(h("span", { class: "leapp-pill leapp-" + r.status }, labels[r.status] || r.status), " ", h("b", {}, r.id), " ");
    if (n) info.append(h("span", { class: "leapp-muted" }, "node " + n.name + " · " + n.op + (n.scope ? " · " + n.scope : "")), " ");
    else if (r) info.append(h("span", { class: "leapp-muted" }, "this row has no node in the graph (" + (r.tap_status || "") + ")"), " ");
    if (r) {
      for (const m of metrics) info.append(h("span", { class: "leapp-kvi" }, m.label + " ", h("b", {}, fmt(r.cells[m.key], m.type))), " ");
      if (r.reason) info.append(h("span", {}, r.reason), " ");
      info.append(h("button", { class: "leapp-btn", "data-leapp-graph-to-table": "", on: { click: () => hooks.showTable() } }, "show in table"));
    }
  }
  return {
    // a row was selected (table, plot, graph, search...): unfold its scope, outline and centre its node
    showRow(id) {
      selRow = id;
      const i = rowNode.get(id);
      selNode = i === void 0 ? null : i;
      if (selNode !== null) reveal(selNode);
      if (!dirty) paint();
      describe();
      if (selNode !== null) nav.centerOn(elOf(selNode));
    }
  };
}
function engineGraphTab(ctx, panel) {
  const { state } = ctx;
  const acc = accuracyGraph(panel, ctx.view.engine_graph, ctx.table, ctx.byId, {
    select: (id) => ctx.select(id, null, true),
    showTable: () => {
      ctx.showTab("table");
      if (state.row) ctx.select(state.row, state.sample, false);
    }
  });
  return { select: (r) => acc.showRow(r.id) };
}

// src/views/repair.js
var cfg = { displayModeBar: false, displaylogo: false, showLink: false };
var LABEL_CHAR_PX = 6.2;
function barsLayout(bars, title, y) {
  const lines = (bars.lines || []).filter((l) => l.y !== null && l.y !== void 0);
  const ax = { type: bars.log ? "log" : "linear", title: { text: bars.ylabel || "", font: { size: 10 } } };
  const pos = [...y, ...lines.map((l) => l.y)].filter((v) => typeof v === "number" && v > 0);
  if (bars.log && pos.length) ax.range = [Math.log10(Math.min(...pos)) - 0.4, Math.log10(Math.max(...pos)) + 0.2];
  const right = Math.max(10, ...lines.map((l) => Math.ceil(l.label.length * LABEL_CHAR_PX) + 10));
  return {
    height: 300,
    margin: { l: 60, r: right, t: 34, b: 90 },
    showlegend: false,
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    title: { text: title, font: { size: 12 } },
    yaxis: ax,
    xaxis: { tickangle: -40, automargin: true, type: "category" },
    shapes: lines.map((l) => ({ type: "line", xref: "paper", x0: 0, x1: 1, y0: l.y, y1: l.y, line: { color: l.color, dash: l.dash || "solid" } })),
    // two labels beside each other's line: the upper one above its line, the others below theirs
    annotations: lines.map((l) => ({
      xref: "paper",
      x: 1,
      xanchor: "left",
      xshift: 4,
      y: bars.log ? Math.log10(l.y) : l.y,
      yanchor: lines.length > 1 && l.y === Math.max(...lines.map((m) => m.y)) ? "bottom" : lines.length > 1 ? "top" : "middle",
      text: l.label,
      showarrow: false,
      font: { size: 10, color: l.color }
    }))
  };
}
function drawBars(div, bars, onPick) {
  for (const c of [...div.children]) clearPlot(c);
  div.replaceChildren();
  if (!hasPlotly()) {
    div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded"));
    return;
  }
  const color = (st) => st === "fail" ? "#c62828" : st === "pass" ? "#2e7d32" : "#90a4ae";
  const plot = (box, title, x, y, status, pick) => {
    globalThis.Plotly.newPlot(box, [{
      type: "bar",
      x: x.map(plotText),
      y,
      marker: { color: status.map(color) },
      hovertemplate: "%{x}<br>%{y:.4e}<extra></extra>"
    }], themed(box, barsLayout(bars, title, y)), cfg);
    if (pick && box.on) box.on("plotly_click", (ev) => {
      const p = ev.points && ev.points[0];
      if (p) pick(x[p.pointIndex]);
    });
  };
  const top = h("div", { "data-leapp-bars-plot": "candidates" }), bottom = h("div", { "data-leapp-bars-plot": "steps" });
  div.append(top, bottom);
  plot(top, bars.title || "", bars.x, bars.y, bars.status || [], onPick);
  if (bars.steps && bars.steps.x.length) plot(bottom, bars.steps.title || "", bars.steps.x, bars.steps.y, bars.steps.status || [], null);
}
function barsTab(ctx, panel) {
  const { view } = ctx;
  if (!view.bars) return { handsToTable: true };
  const barsDiv = h("div", { class: "leapp-profile", "data-leapp-bars": "" });
  panel.append(h("div", { class: "leapp-toolbar" }, h("span", { class: "leapp-muted" }, view.bars.caption || "")), barsDiv);
  return { show: () => drawBars(barsDiv, view.bars, (id) => ctx.select(id, null, "plot")), handsToTable: true };
}

// src/views/layers.js
function layerNodes(view) {
  return Object.keys(view.nodes || {}).filter((k) => ((view.nodes[k] || {}).layers || []).length);
}
function pickLayer(view, node, engine) {
  const names = layerNodes(view);
  const name = names.includes(node) ? node : names[0];
  if (!name) return null;
  const entries = view.nodes[name].layers;
  const entry = entries.find((e) => e.engine === engine) || entries.find((e) => e.view) || entries[0];
  return { node: name, entry, asked: node };
}
function layerButtons(ctx, node) {
  const n = (ctx.view.nodes || {})[node];
  return (n && n.layers || []).map((e) => h(
    "button",
    {
      class: "leapp-btn leapp-layers-link leapp-" + (e.status === "diverged" ? "fail" : e.status === "ok" ? "pass" : "uncompared"),
      "data-leapp-open-layers": node,
      "data-leapp-engine": e.engine,
      title: "the layers of " + node + " on " + e.engine + ": its accuracy table, histograms and accuracy graph",
      on: { click: (ev) => {
        ev.stopPropagation();
        ctx.openLayers(node, e.engine);
      } }
    },
    "Layers on " + e.engine + " (" + e.status + ") ▸"
  ));
}
function layersTab(ctx, panel) {
  const { view, state } = ctx;
  const names = layerNodes(view);
  if (!names.length) return null;
  const nodeSel = h(
    "select",
    { "data-leapp-layers-node": "", on: { change: (e) => {
      state.node = e.target.value;
      draw();
    } } },
    names.map((n) => h("option", { value: n }, n))
  );
  const engSel = h("select", { "data-leapp-layers-engine": "", on: { change: (e) => {
    state.layersEngine = e.target.value;
    draw();
  } } });
  const head = h("div", { class: "leapp-layers-head" });
  const body = h("div", { class: "leapp-layers-body" });
  panel.append(
    h(
      "div",
      { class: "leapp-toolbar" },
      h("label", {}, "node ", nodeSel),
      " ",
      h("label", {}, "engine ", engSel),
      h("span", { class: "leapp-muted" }, " the node prepared from the trace, compiled for the engine and verified tap by tap, in model order")
    ),
    head,
    body
  );
  let drawn = null;
  function draw(force) {
    const pick = pickLayer(view, state.node, state.layersEngine);
    const key = pick.node + "\0" + pick.entry.engine;
    if (!force && key === drawn) return;
    drawn = key;
    const { node, entry } = pick;
    state.layersEngine = entry.engine;
    nodeSel.value = node;
    engSel.replaceChildren(...view.nodes[node].layers.map((e) => h("option", { value: e.engine, selected: e.engine === entry.engine }, e.engine + " · " + e.status)));
    head.replaceChildren(...[
      pick.asked && pick.asked !== node ? h("div", { class: "leapp-note", "data-leapp-layers-fallback": pick.asked }, "node " + pick.asked + " has no engine build; showing " + node) : null,
      kv([
        ["node", node],
        ["engine", entry.engine],
        ["status", entry.status],
        ["first divergent", entry.first_divergent || "none"],
        ["largest local error", entry.worst_local || (entry.view ? "– (no --local)" : "–")],
        entry.error ? ["error", entry.error] : null,
        entry.verify_run ? ["verify run", entry.verify_run] : null
      ].filter(Boolean))
    ].filter(Boolean));
    head.setAttribute("data-leapp-layers-status", entry.status);
    head.setAttribute("data-leapp-worst-local", entry.worst_local || "");
    body.replaceChildren();
    body.setAttribute("data-leapp-layers", node);
    body.setAttribute("data-leapp-layers-engine", entry.engine);
    if (entry.view) ctx.renderView(body, entry.view, {});
    else body.append(h("div", { class: "leapp-empty", "data-leapp-layers-omitted": "" }, entry.omitted || "no verify run"));
  }
  return {
    // drawn when shown (its plots size themselves only when visible); a row of another node
    // selected while it is shown draws that node's
    show: () => draw(),
    render: () => {
      if (state.tab === "layers") draw();
    },
    select: () => {
      if (state.tab === "layers") draw();
    },
    actions: (r) => r.node ? layerButtons(ctx, r.node) : []
  };
}
function pipelineTab(ctx, panel) {
  const { view } = ctx;
  const tables = view.pipeline_engines || [];
  if (!tables.length) return null;
  const many = (view.graphs || []).length > 1;
  const pct = (v) => v === null || v === void 0 ? "–" : fmt(100 * v) + " %";
  panel.append(h("div", { class: "leapp-rule" }, "Each node's engine build run on the cached samples, fed its upstream nodes' engine outputs (nrmse: cumulative) and fed the recorded inputs (local nrmse: its own); own share = local / cumulative. Pipeline order; click a row to open that node's layers on that engine."));
  for (const t of tables) {
    const key = (n) => (many ? t.graph + ":" : "") + n;
    panel.append(h(
      "div",
      { class: "leapp-graphhead", "data-leapp-pipeline": t.engine, "data-leapp-pipeline-graph": t.graph },
      h("b", {}, t.graph),
      " on ",
      h("b", {}, t.engine),
      " · first divergent node: ",
      h("span", {
        class: t.first_divergent_node ? "leapp-pill leapp-fail" : "leapp-pill leapp-pass",
        "data-leapp-first-divergent-node": t.first_divergent_node || ""
      }, t.first_divergent_node || "none")
    ));
    panel.append(h(
      "table",
      { class: "leapp-table leapp-pipeline-table" },
      h("thead", {}, h("tr", {}, ["node", "port", "nrmse (cumulative)", "local nrmse", "own share", ""].map((x) => h("th", {}, x)))),
      h("tbody", {}, t.nodes.map((r) => {
        const has = ((view.nodes[key(r.node)] || {}).layers || []).some((e) => e.engine === t.engine);
        return h(
          "tr",
          {
            class: "leapp-row" + (r.first_divergent ? " leapp-fail leapp-first-divergent" : ""),
            "data-leapp-pipeline-row": r.node + "/" + r.port,
            "data-leapp-pipeline-engine": t.engine,
            "data-leapp-first-divergent": r.first_divergent ? "true" : "false",
            title: has ? "open the layers of " + r.node + " on " + t.engine : null,
            on: { click: () => {
              if (has) ctx.openLayers(key(r.node), t.engine);
            } }
          },
          h("td", {}, r.node),
          h("td", {}, r.port),
          h("td", { class: "leapp-num" }, pct(r.nrmse)),
          h("td", { class: "leapp-num" }, pct(r.local_nrmse)),
          h("td", { class: "leapp-num" }, pct(r.own_share)),
          h("td", {}, r.first_divergent ? "← first divergent node" : "")
        );
      }))
    ));
  }
  return {};
}

// src/views/trace.js
function traceGraphTab(ctx, panel) {
  const { view } = ctx;
  const hooks = [];
  for (const g of view.graphs || []) {
    panel.append(
      h(
        "div",
        { class: "leapp-graphhead" },
        h("b", {}, g.name),
        " · ",
        g.status,
        " · verdict ",
        g.verdict,
        h("span", { class: "leapp-muted" }, " (layout: " + g.layout + "; click a node to open it; drag to pan, wheel to zoom; dashed = feedback)")
      ),
      ...g.error ? [h("div", { class: "leapp-note" }, g.error)] : []
    );
    if (!g.svg) continue;
    const nav = svgGraph(g.svg, "[data-leapp-node].leapp-fail");
    panel.append(nav.el);
    for (const n of nav.view.querySelectorAll("[data-leapp-node]")) {
      n.addEventListener("click", () => ctx.openNode(n.getAttribute("data-leapp-node")));
    }
    hooks.push((r) => {
      for (const n of nav.view.querySelectorAll("[data-leapp-node]")) n.classList.toggle("leapp-node-selected", n.getAttribute("data-leapp-node") === r.node);
    });
    const many = (view.graphs || []).length > 1;
    const mine = Object.keys(view.nodes || {}).filter((k) => (!many || k.startsWith(g.name + ":")) && (view.nodes[k].layers || []).length);
    if (mine.length) panel.append(h(
      "div",
      { class: "leapp-toolbar leapp-graph-layers", "data-leapp-graph-layers": g.name },
      h("span", { class: "leapp-muted" }, "inside the nodes: "),
      mine.map((k) => h("span", { class: "leapp-graph-layers-node" }, h("b", {}, k), " ", layerButtons(ctx, k)))
    ));
  }
  if (!(view.graphs || []).length) panel.append(h("div", { class: "leapp-empty" }, "no graph"));
  return { select: (r) => {
    for (const f of hooks) f(r);
  } };
}
function nodeTab(ctx, panel) {
  const { view, state } = ctx;
  const nodeNames = Object.keys(view.nodes || {});
  const nodeSelect = h(
    "select",
    { "data-leapp-node-picker": "", on: { change: (e) => {
      state.node = e.target.value;
      renderNode();
    } } },
    nodeNames.map((n) => h("option", { value: n }, n))
  );
  const nodeBody = h("div", { class: "leapp-nodebody" });
  panel.append(h("div", { class: "leapp-toolbar" }, h("label", {}, "node ", nodeSelect)), nodeBody);
  function renderNode() {
    const key = state.node && (view.nodes || {})[state.node] ? state.node : nodeNames[0];
    const n = (view.nodes || {})[key];
    nodeBody.replaceChildren();
    if (!n) {
      nodeBody.append(h("div", { class: "leapp-empty" }, "no node"));
      return;
    }
    nodeSelect.value = key;
    nodeBody.setAttribute("data-leapp-node-panel", n.name);
    nodeBody.append(kv([
      ["node", n.name],
      ["verdict", n.verdict],
      ["backend", n.backend],
      ["artifact", n.artifact],
      ["samples recorded", n.samples],
      n.dropped_inputs.length ? ["inputs LEAPP dropped", n.dropped_inputs.join(", ")] : null,
      n.error ? ["error", n.error] : null
    ]));
    nodeBody.append(
      h("div", { class: "leapp-sub" }, "ports"),
      h(
        "table",
        { class: "leapp-kv" },
        h("thead", {}, h("tr", {}, ["port", "dir", "dtype", "shape", "role", "source", "meaning (LEAPP semantics)"].map((x) => h("th", {}, x)))),
        h("tbody", {}, n.ports.map((p) => h(
          "tr",
          {},
          h("td", {}, p.name + (p.traced_name ? " (traced " + p.traced_name + ")" : "")),
          h("td", {}, p.direction),
          h("td", {}, p.dtype || "?"),
          h("td", {}, shapeText(p.shape)),
          h("td", {}, p.role),
          h("td", {}, (p.source || "") + (p.feedback ? " (feedback)" : "")),
          h("td", { class: "leapp-wrap", "data-leapp-port-meaning": p.meaning ? p.name : null }, p.meaning || "–")
        )))
      )
    );
    if ((n.taps || []).length) nodeBody.append(
      h("div", { class: "leapp-sub" }, "taps (in the order they fired)"),
      h(
        "table",
        { class: "leapp-kv" },
        h("thead", {}, h("tr", {}, ["tap", "site"].map((x) => h("th", {}, x)))),
        h("tbody", {}, n.taps.map((t) => h("tr", { "data-leapp-tap": t.name }, h("td", {}, t.name), h("td", {}, t.site))))
      )
    );
    const layers = n.layers || [];
    if (layers.length) nodeBody.append(
      h("div", { class: "leapp-sub" }, "inside the node, on engines"),
      h(
        "table",
        { class: "leapp-kv", "data-leapp-node-engines": "" },
        h("thead", {}, h("tr", {}, ["engine", "status", "first divergent", "largest local error", ""].map((x) => h("th", {}, x)))),
        h("tbody", {}, layers.map((e) => h(
          "tr",
          { "data-leapp-node-engine": e.engine },
          h("td", {}, e.engine),
          h("td", {}, e.status + (e.error ? ": " + e.error : "")),
          h("td", {}, e.first_divergent || "none"),
          h("td", {}, e.worst_local || "–"),
          h("td", {}, layerButtons(ctx, key).filter((b) => b.getAttribute("data-leapp-engine") === e.engine))
        )))
      )
    );
    if (n.hazards.length) nodeBody.append(
      h("div", { class: "leapp-sub" }, "hazards"),
      h("ul", { class: "leapp-hazards" }, n.hazards.map((z) => h("li", {}, h("b", {}, z.kind), z.port ? " · " + z.port : "", ": ", z.message)))
    );
    if (n.fx) {
      nodeBody.append(h("div", { class: "leapp-sub" }, "FX graph (" + n.fx.n_nodes + " nodes" + (n.fx.suspects.length ? "; " + n.fx.suspects.length + " flagged literal(s) in red" : "") + ")"));
      if (n.fx.suspects.length) nodeBody.append(h("ul", { class: "leapp-suspects" }, n.fx.suspects.map((s) => h("li", { "data-leapp-suspect": s.name }, h("b", {}, s.name), " = ", s.target, "(", s.args.join(", "), ")  literals: ", s.literals.join(", ")))));
      if (n.fx.svg) {
        const g = svgGraph(n.fx.svg, "[data-leapp-fx].leapp-suspect");
        g.view.classList.add("leapp-fx");
        nodeBody.append(g.el);
      }
      const marks = new Set(n.fx.code_marks || []);
      nodeBody.append(h("pre", { class: "leapp-code" }, (n.fx.code || "").split("\n").map((line, i) => h("span", { class: marks.has(i) ? "leapp-mark" : null }, line + "\n"))));
    }
  }
  return { render: renderNode, refresh: renderNode, select: renderNode };
}
function hazardsTab(ctx, panel) {
  const { view } = ctx;
  const hz = view.hazards || [];
  panel.append(hz.length ? h(
    "table",
    { class: "leapp-table leapp-hazards-table" },
    h("thead", {}, h("tr", {}, ["kind", "node", "port", "samples", "what it means"].map((x) => h("th", {}, x)))),
    h("tbody", {}, hz.map((z) => h(
      "tr",
      {
        "data-leapp-hazard": z.kind,
        class: "leapp-row",
        on: { click: () => {
          if (z.node) {
            ctx.openNode((view.graphs.length > 1 ? z.graph + ":" : "") + z.node);
          }
        } }
      },
      h("td", {}, z.kind),
      h("td", {}, z.node || "–"),
      h("td", {}, z.port || "–"),
      h("td", {}, z.samples.join(", ")),
      h("td", { class: "leapp-wrap" }, z.message)
    )))
  ) : h("div", { class: "leapp-empty" }, "no hazards found"));
  return {};
}
function logTab(ctx, panel) {
  const { view, state } = ctx;
  if (!view.log) return null;
  const L = view.log;
  const levelNo = new Map(L.records.map((r) => [r.level, r.levelno]));
  const lvSel = h(
    "select",
    { "data-leapp-log-level": "", on: { change: (e) => {
      state.logLevel = Number(e.target.value);
      fillLog();
    } } },
    h("option", { value: "0" }, "all levels"),
    (L.levels || []).map((l) => h("option", { value: String(levelNo.get(l)) }, l + " and above"))
  );
  const secSel = h(
    "select",
    { "data-leapp-log-section": "", on: { change: (e) => {
      state.logSection = e.target.value;
      fillLog();
    } } },
    h("option", { value: "" }, "all sections"),
    (L.sections || []).map((s) => h("option", { value: s }, s))
  );
  const list = h("div", { class: "leapp-log" });
  const count = h("span", { class: "leapp-muted" });
  panel.append(h(
    "div",
    { class: "leapp-toolbar" },
    lvSel,
    " ",
    secSel,
    " ",
    count,
    L.truncated ? h("span", { class: "leapp-muted" }, " (" + L.truncated + " older records not shown)") : null
  ), list);
  function fillLog() {
    list.replaceChildren();
    let n = 0;
    for (const r of L.records) {
      if (r.levelno < state.logLevel || state.logSection && r.section !== state.logSection) continue;
      n++;
      list.append(h(
        "div",
        {
          class: "leapp-logline leapp-lv-" + r.level.toLowerCase(),
          "data-leapp-log-level": r.level,
          "data-leapp-log-section": r.section || ""
        },
        h("span", { class: "leapp-lv" }, r.level),
        r.section ? h("span", { class: "leapp-sec" }, "[" + r.section + "]") : null,
        " ",
        r.message
      ));
    }
    count.textContent = n + " of " + L.records.length + " records";
  }
  fillLog();
  return {};
}

// src/views/verify.js
function scopeGroup(scope) {
  return scope ? scope.split(".").slice(0, 2).join(".") : "";
}
function profileTicks(profile) {
  const n = profile.x.length, xs = profile.x.map((_, i) => i);
  if (n <= 40) return { tickvals: xs, ticktext: profile.x.map(plotText), bands: [] };
  const scopes = profile.scope || [];
  const runs = [];
  for (let i = 0; i < n; i++) {
    const g = scopeGroup(scopes[i]);
    if (!runs.length || runs[runs.length - 1].g !== g) runs.push({ g, start: i, end: i });
    else runs[runs.length - 1].end = i;
  }
  if (runs.length > 1 && runs.some((r) => r.g)) {
    const every2 = Math.max(1, Math.ceil(runs.length / 40));
    const shown = runs.filter((_, k) => k % every2 === 0);
    return {
      tickvals: shown.map((r) => r.start),
      ticktext: shown.map((r) => plotText(r.g || "(no scope)")),
      bands: runs.filter((_, k) => k % 2 === 1).map((r) => [r.start - 0.5, r.end + 0.5])
    };
  }
  const every = Math.max(1, Math.ceil(n / 30));
  const vals = xs.filter((i) => i % every === 0);
  return { tickvals: vals, ticktext: vals.map((i) => plotText(profile.x[i])), bands: [] };
}
function profileHover(profile) {
  const scopes = profile.scope || [], reasons = profile.reason || [];
  return profile.x.map((name, i) => plotText(name) + (scopes[i] ? " · " + plotText(scopes[i]) : "") + (reasons[i] ? "<br>why: " + plotText(reasons[i]) : ""));
}
function profilePoints(s, nonfinite) {
  const ys = s.y.map((v) => v === null || v === void 0 ? null : v);
  const zeros = s.log ? ys.map((v, i) => v === 0 ? i : -1).filter((i) => i >= 0) : [];
  const missing = ys.map((v, i) => v === null || s.log && v !== 0 && !(v > 0) ? i : -1).filter((i) => i >= 0);
  const finite = ys.filter((v) => v !== null && (!s.log || v > 0));
  const rule = s.threshold !== null && s.threshold !== void 0 ? [s.threshold] : [];
  let top = finite.length ? Math.max(...finite) : 1;
  if (rule.length) top = Math.max(top, rule[0]);
  const low = finite.length || rule.length ? Math.min(...finite, ...rule) : 1;
  const nf = nonfinite || [];
  return {
    missing,
    zeros,
    yMissing: s.log ? top * 4 : top + Math.abs(top) * 0.12 + (top === 0 ? 1 : 0),
    yZero: low / 4,
    missingLabel: "× no " + s.label + (missing.some((i) => nf[i]) ? " (non-finite)" : ""),
    zeroLabel: "○ " + s.label + " 0 (exact)"
  };
}
function profileMarks(profile, near) {
  const defs = [
    ["first_divergent_index", "#c62828", "dot", "first divergent"],
    ["first_local_divergent_index", "#ef6c00", "dashdot", "first locally divergent"],
    ["first_beyond_expected_index", "#6a1b9a", "dash", profile.beyond_label || "first beyond expected"]
  ];
  const marks = [];
  for (const [key, color, dash, label] of defs) {
    const i = profile[key];
    if (i === null || i === void 0) continue;
    const same = marks.find((m) => m.i === i && m.label);
    if (same) same.label += " · " + label;
    marks.push({ i, color, dash, label: same ? "" : label, yshift: 0 });
  }
  marks.sort((a, b) => a.i - b.i);
  const labelled2 = marks.filter((m) => m.label);
  for (let k = 1; k < labelled2.length; k++) {
    if (labelled2[k].i - labelled2[k - 1].i < near) labelled2[k].yshift = labelled2[k - 1].yshift + 12;
  }
  return marks;
}
function drawProfile(div, profile, metric, onPick) {
  clearPlot(div);
  const s = (profile.series || []).find((x) => x.key === metric) || (profile.series || [])[0];
  if (!s) {
    div.append(h("div", { class: "leapp-empty" }, "no profile"));
    return;
  }
  if (!hasPlotly()) {
    div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded"));
    return;
  }
  const n = profile.x.length, xs = profile.x.map((_, i) => i);
  const nonfinite = profile.nonfinite || [];
  const hover = profileHover(profile);
  const { missing, zeros, yMissing, yZero, missingLabel, zeroLabel } = profilePoints(s, nonfinite);
  const colours = (s.status || profile.status).map((st, i) => statusColor(s.status ? st : (profile.tone || [])[i] || st));
  const size = n <= 100 ? 8 : n <= 600 ? 6 : 4;
  const data = [{
    type: "scatter",
    mode: n <= 600 ? "lines+markers" : "markers",
    x: xs,
    y: s.y,
    text: hover,
    customdata: profile.x,
    hovertemplate: "%{text}<br>" + s.label + " %{y:.3e}<extra></extra>",
    line: { width: 1, color: "rgba(120,120,120,0.6)" },
    // a local series is coloured by the rule on the local error; else by the row's tone
    marker: { color: colours, size }
  }];
  if (zeros.length) {
    data.push({
      type: "scatter",
      mode: "markers",
      x: zeros,
      y: zeros.map(() => yZero),
      customdata: zeros.map((i) => profile.x[i]),
      text: zeros.map((i) => hover[i] + "<br>" + s.label + " 0 (exact)"),
      hovertemplate: "%{text}<extra></extra>",
      name: "exact zero",
      marker: { symbol: "circle-open", size: size + 1, color: zeros.map((i) => colours[i]) }
    });
  }
  if (missing.length) {
    data.push({
      type: "scatter",
      mode: "markers",
      x: missing,
      y: missing.map(() => yMissing),
      customdata: missing.map((i) => profile.x[i]),
      text: missing.map((i) => hover[i] + "<br>" + (nonfinite[i] ? nonfinite[i] + " non-finite values: no " + s.label : "no " + s.label)),
      hovertemplate: "%{text}<extra></extra>",
      name: "no value",
      marker: { symbol: "x", size: size + 2, color: missing.map((i) => nonfinite[i] ? "#6a1b9a" : "#9e9e9e") }
    });
  }
  const shapes = [], annotations = [];
  const ay = (v) => s.log ? Math.log10(v) : v;
  const plotPx = Math.max(200, (div.clientWidth || 800) - 70);
  const marks = profileMarks(profile, Math.max(1, Math.ceil((n + 1) * 150 / plotPx)));
  for (const m of marks) {
    shapes.push({ type: "line", x0: m.i, x1: m.i, yref: "paper", y0: 0, y1: 1, line: { color: m.color, dash: m.dash, width: 1.5 } });
    if (m.label) annotations.push({ x: m.i, yref: "paper", y: 1, yanchor: "bottom", yshift: m.yshift, text: m.label, showarrow: false, font: { size: 10, color: m.color } });
  }
  const lift = Math.max(0, ...marks.map((m) => m.yshift));
  if (s.threshold !== null && s.threshold !== void 0) {
    shapes.push({ type: "line", xref: "paper", x0: 0, x1: 1, y0: s.threshold, y1: s.threshold, line: { color: "#c62828", dash: "dash", width: 1 } });
    annotations.push({
      xref: "paper",
      x: 1,
      xanchor: "right",
      y: ay(s.threshold),
      yanchor: "bottom",
      showarrow: false,
      text: "rule: " + s.label + (s.worse === "below" ? " < " : " > ") + fmt(s.threshold),
      font: { size: 10, color: "#c62828" }
    });
  }
  if (missing.length) annotations.push({
    xref: "paper",
    x: 0,
    xanchor: "left",
    y: ay(yMissing),
    yanchor: "bottom",
    showarrow: false,
    text: missingLabel,
    font: { size: 10, color: "#6a1b9a" }
  });
  if (zeros.length) annotations.push({
    xref: "paper",
    x: 0,
    xanchor: "left",
    y: ay(yZero),
    yanchor: "bottom",
    showarrow: false,
    text: zeroLabel,
    font: { size: 10, color: "#555" }
  });
  const ticks = profileTicks(profile);
  for (const [a, b] of ticks.bands) shapes.push({
    type: "rect",
    x0: a,
    x1: b,
    yref: "paper",
    y0: 0,
    y1: 1,
    layer: "below",
    line: { width: 0 },
    fillcolor: "rgba(128,128,128,0.09)"
  });
  const yaxis = { type: s.log ? "log" : "linear", title: { text: s.label, font: { size: 10 } } };
  const layout = {
    title: { text: s.label + " over outputs and taps, in model order (" + n + " rows)", font: { size: 12 } },
    height: n > 200 ? 480 : 320,
    margin: { l: 60, r: 10, t: 40 + lift, b: 90 },
    shapes,
    annotations,
    showlegend: false,
    dragmode: "zoom",
    hovermode: "closest",
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    xaxis: { tickvals: ticks.tickvals, ticktext: ticks.ticktext, tickangle: -40, automargin: true, range: [-1, n] },
    yaxis
  };
  globalThis.Plotly.newPlot(div, data, themed(div, layout), {
    displayModeBar: true,
    displaylogo: false,
    showLink: false,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "toImage"],
    scrollZoom: false
  });
  if (div.on) div.on("plotly_click", (ev) => {
    const p = ev.points && ev.points[0];
    if (p && p.customdata) onPick(p.customdata);
  });
}
function profileTab(ctx, panel) {
  const { view, state } = ctx;
  if (!view.profile) return { handsToTable: true };
  const series = view.profile.series || [];
  const profileDiv = h("div", { class: "leapp-profile" });
  const draw = () => drawProfile(profileDiv, view.profile, state.profileMetric, (id) => ctx.select(id, null, "plot"));
  const msel = h(
    "select",
    { "data-leapp-profile-metric": "", on: { change: (e) => {
      state.profileMetric = e.target.value;
      draw();
    } } },
    series.map((s) => h("option", { value: s.key, selected: s.key === state.profileMetric }, s.label))
  );
  panel.append(h(
    "div",
    { class: "leapp-toolbar" },
    h("label", {}, "metric ", msel),
    h("span", { class: "leapp-muted" }, " each judged output and tap in model order. Drag to zoom, double-click to zoom out, the plot's tool bar pans; dotted line = first divergent, dashed = the rule's threshold, × = no value (non-finite), ○ at the bottom = exactly 0 (below a log axis), bands = modules; click a point to open its row")
  ), profileDiv);
  return { show: draw, handsToTable: true };
}

// src/tabs.js
var TABS = {
  ...Object.fromEntries(DEEP_SECTIONS.map((name) => [name, deepTab(name)])),
  table: tableTab,
  // every kind; built even without a table tab (the API's rows)
  node: nodeTab,
  // a verify view's graph is the accuracy graph; a trace view's, LEAPP's connectivity
  graph: (ctx, panel) => ctx.view.engine_graph ? engineGraphTab(ctx, panel) : traceGraphTab(ctx, panel),
  hazards: hazardsTab,
  log: logTab,
  layers: layersTab,
  // a trace node's verify view per engine (--engine)
  pipeline: pipelineTab,
  // the pipeline on each engine, node by node
  profile: profileTab,
  bars: barsTab
};

// src/view.js
var MIN_PANEL_H = 420;
function initialState(view) {
  const columns = view.table && view.table.columns || [];
  const series = view.profile && view.profile.series || [];
  return {
    tab: view.tabs && view.tabs[0] && view.tabs[0].id || "table",
    row: null,
    sample: null,
    sortKey: null,
    sortDir: 1,
    onlyBad: false,
    query: "",
    groupBy: false,
    collapsed: /* @__PURE__ */ new Set(),
    hidden: new Set(columns.filter((c) => c.hidden).map((c) => c.key)),
    panelOpen: true,
    node: null,
    layersEngine: null,
    logLevel: 0,
    logSection: "",
    profileMetric: view.profile && view.profile.default || (series[0] ? series[0].key : null)
  };
}
function header(view, onBadge, onTab) {
  return h(
    "div",
    { class: "leapp-head" },
    h("div", { class: "leapp-title" }, h("span", { class: "leapp-dot leapp-" + view.status }), view.title),
    view.subtitle ? h("div", { class: "leapp-subtitle" }, view.subtitle) : null,
    findingEl(view.finding, onBadge),
    h("div", { class: "leapp-badges" }, (view.badges || []).map((b) => b.tab && onTab ? h(
      "button",
      {
        class: "leapp-badge leapp-badge-link" + (b.status ? " leapp-" + b.status : ""),
        title: b.title,
        "data-leapp-badge-tab": b.tab,
        on: { click: () => onTab(b.tab) }
      },
      h("b", {}, b.label),
      " ",
      fmt(b.value)
    ) : b.row ? h(
      "button",
      {
        class: "leapp-badge leapp-badge-link" + (b.status ? " leapp-" + b.status : ""),
        title: b.title,
        "data-leapp-badge-row": b.row,
        on: { click: () => onBadge(b.row) }
      },
      h("b", {}, b.label),
      " ",
      fmt(b.value)
    ) : h("span", { class: "leapp-badge" + (b.status ? " leapp-" + b.status : ""), title: b.title }, h("b", {}, b.label), " ", fmt(b.value)))),
    (view.notes || []).length ? h("ul", { class: "leapp-notes" }, view.notes.map((n) => h("li", {}, n))) : null
  );
}
function renderView(el, view, host) {
  host = host || {};
  el.replaceChildren();
  if (!view || !view.kind) {
    el.append(h("div", { class: "leapp-empty" }, "(empty leapp_lab view)"));
    return {};
  }
  const table = view.table || { rows: [], columns: [] };
  const rows = table.rows || [];
  const byId = new Map(rows.map((r) => [r.id, r]));
  const listeners = [];
  let booting = true;
  const frag = host.permalink ? readFragment(view.kind) : null;
  const state = initialState(view);
  const root = h("div", {
    class: "leapp-view" + (host.fill ? " leapp-fill" : ""),
    "data-leapp-kind": view.kind,
    "data-leapp-status": view.status,
    "data-lm-suppress-shortcuts": "true"
  });
  el.append(root);
  const tabs = {};
  const ctx = {
    view,
    host,
    state,
    table,
    rows,
    columns: table.columns || [],
    byId,
    root,
    frag,
    select,
    showTab,
    openNode,
    openLayers,
    writeFragment,
    emit,
    refocus: () => tabs.table.refocus(),
    // a view drawn inside a tab (a trace node's Layers: its verify view), and the buttons
    // the tabs add to a row's side panel
    renderView,
    rowActions: (r) => Object.values(tabs).flatMap((t) => t.actions ? t.actions(r) : [])
  };
  root.append(header(view, (id) => {
    select(id, null, "badge");
    ctx.refocus();
  }, (id) => showTab(id)));
  const tabBar = h("div", { class: "leapp-tabs", role: "tablist" });
  const panels = {};
  root.append(tabBar);
  for (const t of view.tabs || []) {
    tabBar.append(h("button", { class: "leapp-tab", "data-leapp-tab": t.id, role: "tab", on: { click: () => {
      showTab(t.id);
      if (t.id === "table") ctx.refocus();
    } } }, t.label));
    panels[t.id] = h("div", { class: "leapp-panel", "data-leapp-panel": t.id });
    root.append(panels[t.id]);
  }
  for (const [id, render] of Object.entries(TABS)) {
    if (!panels[id] && id !== "table") continue;
    const t = render(ctx, panels[id]);
    if (t) tabs[id] = t;
  }
  const each = (hook, ...args) => {
    for (const t of Object.values(tabs)) if (t[hook]) t[hook](...args);
  };
  let panelH = 0;
  function holdHeight() {
    if (host.fill) return;
    const t = panels.table;
    if (t && t.style.display !== "none" && t.offsetHeight) panelH = Math.max(panelH, t.offsetHeight);
    const hgt = Math.max(panelH, MIN_PANEL_H);
    for (const [k, p] of Object.entries(panels)) {
      p.style.minHeight = hgt + "px";
      if (k !== "table") {
        p.style.height = hgt + "px";
        p.style.overflow = "auto";
      }
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
    for (const fn of listeners.slice()) {
      try {
        fn(id, sample, source);
      } catch (e) {
        console.error(e);
      }
    }
  }
  function select(id, sampleKey, source) {
    const r = byId.get(id);
    if (!r) return false;
    source = source || "api";
    state.row = id;
    state.sample = sampleKey ?? r.default_sample ?? (r.samples[0] && r.samples[0].key);
    if (r.node) state.node = r.node;
    const here = tabs[state.tab];
    const toTable = !!panels.table && !!(here && here.handsToTable) && !["api", "init", "restore"].includes(source);
    tabs.table.select(r, source, toTable);
    if (toTable) showTab("table");
    for (const [tid, t] of Object.entries(tabs)) if (tid !== "table" && t.select) t.select(r, source);
    if (source !== "init" && source !== "restore") writeFragment();
    if (host.onSelect && source !== "api" && source !== "init" && source !== "restore") host.onSelect(id, state.sample);
    emit(id, state.sample, source);
    return true;
  }
  function openNode(name) {
    state.node = name;
    if (tabs.node) tabs.node.render();
    showTab("node");
  }
  function openLayers(name, engine) {
    if (!tabs.layers) return;
    state.node = name;
    state.layersEngine = engine || null;
    showTab("layers");
  }
  function fragment() {
    return fragmentOf(view.kind, state);
  }
  function writeFragment() {
    if (!host.permalink || booting || typeof history === "undefined") return;
    const hash = "#" + fragment();
    if (location.hash === hash) return;
    try {
      history.replaceState(null, "", hash);
    } catch (e) {
      location.replace(hash);
    }
  }
  if (host.permalink) window.addEventListener("hashchange", () => {
    const f = readFragment(view.kind);
    if (f) restore(f);
  });
  function restore(f) {
    if (f.q !== null && f.q !== void 0 && f.q !== state.query) tabs.table.setQuery(f.q, "restore");
    if (f.tab && panels[f.tab] && f.tab !== state.tab) showTab(f.tab);
    if (f.row && byId.has(f.row) && (f.row !== state.row || f.sample && f.sample !== state.sample)) select(f.row, f.sample || null, "restore");
    else if (f.row && !byId.has(f.row)) tabs.table.notice("the link's row “" + f.row + "” is not in this report");
  }
  each("init");
  holdHeight();
  showTab(frag && frag.tab && panels[frag.tab] ? frag.tab : state.tab);
  const startRow = frag && frag.row && byId.has(frag.row) ? frag.row : null;
  const lost = frag && frag.row && !startRow ? frag.row : null;
  let first = startRow || (table.open && byId.has(table.open) ? table.open : null) || table.first_divergent || rows[0] && rows[0].id;
  if (lost && state.query) {
    const shown = tabs.table.rowIds();
    first = shown.includes(first) ? first : shown[0] || null;
  }
  if (first) select(first, startRow ? frag.sample || null : null, startRow ? "restore" : "init");
  else each("refresh");
  if (lost) tabs.table.notice("the link's row “" + lost + "” is not in this report" + (state.query ? "; its search is kept" : ""));
  booting = false;
  each("ready");
  const api = {
    state,
    select: (id, sampleKey, source) => select(id, sampleKey ?? null, source || "api"),
    onSelect: listeners,
    scrollToRow: (id) => tabs.table.reveal(id, "api"),
    showTab,
    search: (q) => tabs.table.setQuery(q || "", "api"),
    rowIds: () => tabs.table.rowIds(),
    fragment
  };
  root.leappView = api;
  return api;
}

// src/widget.js
function parkStatic(id) {
  let parked = null, tries = 0, timer = null, stopped = false;
  const find = () => {
    if (stopped) return;
    const st = [...document.querySelectorAll("[data-leapp-static]")].find((e) => e.getAttribute("data-leapp-static") === id);
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
var widget_default = {
  render({ model, el }) {
    let api = null;
    const unpark = parkStatic(model.get("_static_id") || "");
    const draw = () => {
      api = renderView(el, model.get("view"), {
        onSelect(id, sample2) {
          model.set("selected", id);
          model.set("sample", sample2 == null ? "" : String(sample2));
          model.save_changes();
        }
      });
      const sel = model.get("selected"), sample = model.get("sample");
      if (sel && (sel !== api.state.row || sample)) api.select(sel, sample || null);
    };
    draw();
    const onView = () => draw();
    const onSel = () => {
      const id = model.get("selected");
      if (api && api.select && id && id !== api.state.row) api.select(id, model.get("sample") || null);
    };
    model.on("change:view", onView);
    model.on("change:selected", onSel);
    return () => {
      model.off("change:view", onView);
      model.off("change:selected", onSel);
      unpark();
    };
  }
};
export {
  binEdge,
  widget_default as default,
  fmt,
  parseQuery,
  renderDeep,
  renderView,
  tableCsv
};
