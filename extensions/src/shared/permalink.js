// Fragment of the offline report (#view=verify&tab=table&row=NAME&sample=1&q=...): written on every
// selection, read once on load and on hashchange. Pure (extensions/test/permalink.test.js).

// the link's part for this view kind, or null (no fragment, or one of another kind's view)
export function parseFragment(hash, kind) {
  if (!hash) return null;
  const p = new URLSearchParams(hash.slice(1));
  if (p.get("view") && p.get("view") !== kind) return null;
  return { tab: p.get("tab"), row: p.get("row"), sample: p.get("sample"), q: p.get("q") };
}

export function readFragment(kind) {
  if (typeof location === "undefined" || !location.hash) return null;
  return parseFragment(location.hash, kind);
}

// state: tab, row, sample, query
export function fragmentOf(kind, state) {
  const p = new URLSearchParams();
  p.set("view", kind);
  p.set("tab", state.tab);
  if (state.row) p.set("row", state.row);
  if (state.sample !== null && state.sample !== undefined) p.set("sample", String(state.sample));
  if (state.query) p.set("q", state.query);
  return p.toString();
}
