// Search: whitespace-separated terms, all must match. "key:value" looks in one cell (scope:blocks.3
// matches that module and the modules inside it; status: the verdict, its label or the exact status;
// reason: the reason keys); a bare term looks in the row's name, op · scope line and search cells.
// Pure: no DOM (extensions/test/search.test.js).

// the text a bare term is looked for in (lower case, computed once per row)
export function searchText(r, table) {
  const labels = table.status_labels || {};
  const parts = [r.id, r.sub, r.status, labels[r.status], r.tap_status, r.reason];
  for (const k of table.search_keys || []) parts.push(r.cells[k]);
  return parts.filter(x => x !== null && x !== undefined).join("\n").toLowerCase();
}

export function parseQuery(q) {
  return (q || "").toLowerCase().split(/\s+/).filter(Boolean).map(t => {
    const i = t.indexOf(":");
    return i > 0 ? { key: t.slice(0, i), value: t.slice(i + 1) } : { key: null, value: t };
  });
}

export function matchTerm(r, hay, term, table) {
  if (!term.key) return hay.includes(term.value);
  const v = term.value;
  if (term.key === "status") {
    const labels = table.status_labels || {};
    return [r.status, labels[r.status], r.tap_status].some(x => x && String(x).toLowerCase().includes(v));
  }
  if (term.key === "reason") return (r.reason || "").toLowerCase().includes(v);
  if (term.key === "name" || term.key === "id") return r.id.toLowerCase().includes(v);
  const c = r.cells[term.key];
  if (c === null || c === undefined) return false;
  const s = String(c).toLowerCase();
  if (term.key === "scope") return s === v || s.startsWith(v.endsWith(".") ? v : v + ".") || (v.endsWith(".") && s === v.slice(0, -1));
  return s.includes(v);
}
