// The finding: one to three sentences on top of every view (leapp_lab/model/finding.py words them;
// the view dict's "finding" carries {text, status, links}). Its text is exactly report.finding;
// each row name it cites is a link that selects the row.
import { h } from "./dom.js";

const WORD = /[A-Za-z0-9_]/;

// [{text, row|null}]: the finding's text cut at every occurrence of a link's name (whole names only:
// `block1` is not found inside `block10`; the longest name wins where two start at one place)
export function findingParts(text, links) {
  const names = (links || []).filter(l => l && l.text).slice().sort((a, b) => b.text.length - a.text.length);
  const out = [];
  let plain = "", i = 0;
  while (i < text.length) {
    const hit = names.find(l => text.startsWith(l.text, i) && !WORD.test(text[i - 1] || "")
                             && !WORD.test(text[i + l.text.length] || ""));
    if (hit) {
      if (plain) out.push({ text: plain, row: null });
      out.push({ text: hit.text, row: hit.row });
      plain = "";
      i += hit.text.length;
    } else { plain += text[i]; i += 1; }
  }
  if (plain) out.push({ text: plain, row: null });
  return out;
}

// the [data-leapp-finding] element; onRow(id) selects a row (null: the names are plain text)
export function findingEl(finding, onRow) {
  if (!finding || !finding.text) return null;
  const parts = findingParts(finding.text, finding.links).map(p => p.row && onRow
    ? h("a", { class: "leapp-finding-link", href: "#", "data-leapp-finding-row": p.row,
               on: { click: e => { e.preventDefault(); onRow(p.row); } } }, p.text)
    : p.text);
  return h("div", { class: "leapp-finding leapp-" + (finding.status || "pass"), "data-leapp-finding": "",
                    "data-leapp-finding-status": finding.status || "pass", role: "status" }, ...parts);
}
