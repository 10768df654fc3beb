// Search: whitespace-separated terms, all must match. "key:value" looks in one cell, a bare term in
// the row's name, op · scope line and search cells. The keys, their aliases and how each matches are
// in SEARCH_KEYS (docs/notebook.md "Find and jump" lists them); any column of the table is a key too.
// A term that finds nothing says why (explainQuery); Enter opens the best match (enterTarget).
// Pure: no DOM (extensions/test/search.test.js).

// key -> what users also type for it. A key that names no column of the table (and is no alias)
// is unknown: the term is then looked for as plain text, and the box says so when that finds nothing.
export const SEARCH_KEYS = [
  { key: "name", aliases: ["id", "row", "tap"], help: "the row's name (part of it)" },
  { key: "status", aliases: ["verdict", "state"], help: "the verdict, its label or the tap status" },
  { key: "reason", aliases: ["reasons", "why"], help: "the reason keys of the verdict" },
  { key: "scope", aliases: ["scopes", "module"], help: "a module and the modules inside it, at any module boundary" },
  { key: "hazards", aliases: ["hazard"], help: "a hazard kind (trace)" },
  { key: "kind", aliases: ["kinds", "type"], help: "output, tap or op tap (verify)" },
  { key: "node", aliases: ["nodes"], help: "the LEAPP node (trace)" },
  { key: "port", aliases: ["ports"], help: "the output port (trace)" },
  { key: "segment", aliases: ["segments"], help: "the segment (repair)" },
];
const BUILTIN = new Set(["name", "status", "reason"]);        // every table answers these
const ALIAS = new Map(SEARCH_KEYS.flatMap(k => [[k.key, k.key], ...k.aliases.map(a => [a, k.key])]));

// the keys this table answers: the built-in ones, its columns and its search cells (once per table:
// matchTerm asks for every row)
const KEYS = new WeakMap();
export function tableKeys(table) {
  if (KEYS.has(table)) return KEYS.get(table).keys;
  const keys = new Set(BUILTIN);
  for (const c of table.columns || []) keys.add(c.key);
  for (const k of table.search_keys || []) keys.add(k);
  KEYS.set(table, { keys, resolved: new Map() });
  return keys;
}

// the key a typed key stands for in this table, or null (unknown): itself, its alias, or its
// singular / plural ("hazard" -> "hazards")
export function resolveKey(key, table) {
  const keys = tableKeys(table), memo = KEYS.get(table).resolved;
  const k = key.toLowerCase();
  if (memo.has(k)) return memo.get(k);
  let found = null;
  for (const cand of [k, ALIAS.get(k), k.endsWith("s") ? k.slice(0, -1) : k + "s"]) {
    if (cand && keys.has(cand)) { found = cand; break; }
    const a = cand && ALIAS.get(cand);
    if (a && keys.has(a)) { found = a; break; }
  }
  memo.set(k, found);
  return found;
}

// the text a bare term is looked for in (lower case, computed once per row)
export function searchText(r, table) {
  const labels = table.status_labels || {};
  const parts = [r.id, r.sub, r.status, labels[r.status], r.tap_status, r.reason];
  for (const k of table.search_keys || []) parts.push(r.cells[k]);
  return parts.filter(x => x !== null && x !== undefined).join("\n").toLowerCase();
}

// terms: {key, value, text}; key: null for a bare term; text: the term as typed (lower case)
export function parseQuery(q) {
  return (q || "").toLowerCase().split(/\s+/).filter(Boolean).map(t => {
    const i = t.indexOf(":");
    return i > 0 ? { key: t.slice(0, i), value: t.slice(i + 1), text: t } : { key: null, value: t, text: t };
  });
}

// A scope term matches at module boundaries, anywhere in the scope: "layer.1" is m.layer.1 and the
// modules inside it (m.layer.1.conv), never m.layer.10; "/" separates modules like ".".
export function scopeMatches(scope, value) {
  const norm = s => String(s).toLowerCase().replace(/\//g, ".").replace(/^\.+|\.+$/g, "");
  const v = norm(value);
  if (!v) return true;
  return ("." + norm(scope) + ".").includes("." + v + ".");
}

export function matchTerm(r, hay, term, table) {
  if (!term.key) return hay.includes(term.value);
  const key = resolveKey(term.key, table) || (term.key in (r.cells || {}) ? term.key : null);
  if (!key) return hay.includes(term.text);       // "onnx::matmul_3", "graph:node": a name, not a key
  const v = term.value;
  if (key === "status") {
    const labels = table.status_labels || {};
    return [r.status, labels[r.status], r.tap_status].some(x => x && String(x).toLowerCase().includes(v));
  }
  if (key === "reason") return (r.reason || "").toLowerCase().includes(v);
  if (key === "name") return r.id.toLowerCase().includes(v);
  const c = r.cells[key];
  if (c === null || c === undefined) return false;
  if (key === "scope") return scopeMatches(c, v);
  return String(c).toLowerCase().includes(v);
}

// the values of one key over the rows (for "no row has ...": the ones there are), at most `max`
function valuesOf(rows, key, table, max) {
  const labels = table.status_labels || {};
  const seen = new Set();
  for (const r of rows) {
    let vals;
    if (key === "status") vals = [labels[r.status] || r.status];
    else if (key === "reason") vals = (r.reason || "").split(",");
    else vals = String(r.cells[key] ?? "").split(",");
    for (const v of vals) { const t = v.trim(); if (t) seen.add(t); }
    if (seen.size > max) return null;
  }
  return [...seen];
}

// Why a query shows no row, in words (or "" when it shows some): an unknown key, a value no row
// has (with the values there are, when there are few), a term nothing contains, or terms that each
// match but never together. shown: how many rows the table shows; onlyBad/filterLabel: the filter.
export function explainQuery(rows, query, table, hay, shown, filter) {
  const terms = parseQuery(query);
  const notes = [];
  for (const t of terms) {
    const key = t.key ? resolveKey(t.key, table) || (rows.some(r => t.key in (r.cells || {})) ? t.key : null) : null;
    const hits = rows.some(r => matchTerm(r, hay.get(r.id), t, table));
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
  if (terms.length > 1) return "no row matches all of: " + terms.map(t => t.text).join(", ") + (filter ? " (" + filter + ")" : "");
  if (terms.length === 1 && filter) return "no row matches “" + terms[0].text + "” (" + filter + ")";
  return "";
}

// The row Enter opens, of the rows shown (in their order): one whose name is a term exactly, before
// one whose name starts with a term, before the first shown ("getitem_3" opens getitem_3, not
// getitem_33). A name: the row id, its name cell or its node (a trace row is node/port/sample).
export function enterTarget(shown, query, nameKey) {
  const words = parseQuery(query).filter(t => !t.key || t.key === "name" || t.key === "id").map(t => t.value).filter(Boolean);
  if (!shown.length) return null;
  if (!words.length) return shown[0];
  const names = r => [r.id, nameKey ? r.cells[nameKey] : null, r.cells.node].filter(x => x !== null && x !== undefined).map(x => String(x).toLowerCase());
  let best = null, bestRank = 3;
  for (const r of shown) {
    const ns = names(r);
    const rank = words.some(w => ns.includes(w)) ? 0 : words.some(w => ns.some(n => n.startsWith(w))) ? 1 : 2;
    if (rank < bestRank) { best = r; bestRank = rank; if (rank === 0) break; }
  }
  return best;
}
