// Bundles src/ (ES modules) into leapp_view.js, the one file the widget and the offline report
// inline (leapp_lab/views/assets.py). The bundle is committed (pip users need no Node) and must be
// byte-for-byte what this script writes from src/ with the pinned esbuild (package.json):
// tests/unit/test_frontend_bundle.py rebuilds it into a temporary file and compares.
//   npm ci && npm run build                 (in extensions/)
//   node build.mjs --outfile /tmp/x.js      (the test: same options, another file)
import * as esbuild from "esbuild";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const at = args.indexOf("--outfile");
const outfile = at >= 0 ? path.resolve(args[at + 1]) : path.join(here, "leapp_view.js");

await esbuild.build({
  absWorkingDir: here,            // the module comments in the bundle name paths relative to here
  entryPoints: ["src/index.js"],
  outfile,
  bundle: true,
  format: "esm",                  // the report inlines it as <script type="module">; anywidget imports it
  target: "es2020",
  charset: "utf8",                // "–", "◀", "▸" stay readable in the bundle
  legalComments: "none",
  banner: { js: "// GENERATED from extensions/src/ by extensions/build.mjs (esbuild): do not edit; see docs/contributing.md" },
  logLevel: "warning",
});
