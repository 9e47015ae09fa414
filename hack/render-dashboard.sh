#!/usr/bin/env bash
# Renders deploy/grafana/hivekeeper-dashboard.json to docs/dashboard.png with
# sample data, so readers of docs/metrics.md see the dashboard without a
# Grafana. Run it after changing the dashboard; CI does not (the picture is
# documentation, deploy/grafana/dashboard_test.go guards the JSON).
#
# Needs Debian's chromium and a sans-serif font:
#   apt-get install -y chromium fonts-dejavu-core
#
#   hack/render-dashboard.sh [output.png]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dashboard="${root}/deploy/grafana/hivekeeper-dashboard.json"
out=${1:-${root}/docs/dashboard.png}
browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "${browser}" ]]; then
  echo "render-dashboard: chromium not found; apt-get install -y chromium fonts-dejavu-core" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT

# Page height = the grid's bottom edge (30px rows, 8px gaps) plus the header.
# gridPos is written h, w, x, y; pair each y with the h seen just before it.
rows=$(awk '
  /"gridPos"/ {inpos=1; h=0; y=0}
  inpos && /"h":/ {gsub(/[^0-9]/, "", $0); h=$0+0}
  inpos && /"y":/ {gsub(/[^0-9]/, "", $0); y=$0+0; if (y+h > max) max=y+h; inpos=0}
  END {print max}' "${dashboard}")
width=1600
height=$(( rows * 38 + 70 ))

{
  cat <<'HTML'
<!doctype html>
<html><head><meta charset="utf-8"><title>hivekeeper dashboard</title>
<style>
  body { margin: 0; background: #111217; color: #ccccdc; font: 12px "DejaVu Sans", sans-serif; }
  header { display: flex; align-items: baseline; gap: 24px; padding: 12px 16px 6px; }
  #title { font-size: 18px; font-weight: bold; color: #fff; }
  #vars span { margin-right: 10px; border: 1px solid #2c3235; border-radius: 2px; }
  #vars b { background: #22252b; padding: 3px 8px; font-weight: normal; display: inline-block; }
  #vars em { font-style: normal; padding: 3px 8px; display: inline-block; }
  .note { margin-left: auto; color: #8e8e9a; font-style: italic; }
  #grid { position: relative; margin: 6px 16px 16px; }
  .panel { position: absolute; background: #181b1f; border: 1px solid #2c3235; border-radius: 2px;
           box-sizing: border-box; display: flex; flex-direction: column; overflow: hidden; }
  .row { position: absolute; font-size: 15px; font-weight: bold; color: #fff; line-height: 30px; }
  .ptitle { font-weight: bold; padding: 6px 8px 2px; color: #ccccdc; white-space: nowrap; }
  .pbody { flex: 1; position: relative; margin: 0 8px 6px; min-height: 0; }
  .pbody.stat { margin: 4px 8px 8px; border-radius: 2px; color: #fff; font-size: 34px; font-weight: bold;
                display: flex; align-items: center; justify-content: center; }
  .legend { font-size: 11px; line-height: 15px; max-height: 62px; overflow: hidden; }
  .legend span { margin-right: 12px; white-space: nowrap; display: inline-block; }
  .legend i { display: inline-block; width: 14px; height: 3px; margin: 0 5px 3px 0; vertical-align: middle; }
  svg .grid { stroke: #2c3235; stroke-width: 1; }
  svg .axis { fill: #8e8e9a; font-size: 10px; }
</style></head>
<body>
<header><span id="title"></span><span id="vars"></span><span>Last 1 hour</span>
<span class="note">sample data, drawn by hack/render-dashboard.sh</span></header>
<div id="grid"></div>
<script>
const DASHBOARD =
HTML
  cat "${dashboard}"
  echo ';'
  cat "${root}/hack/render-dashboard.js"
  echo '</script></body></html>'
} > "${work}/index.html"

# No network: the page is self-contained. --virtual-time-budget lets the
# load handler finish before the screenshot.
"${browser}" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-extensions --disable-sync --no-first-run --hide-scrollbars \
  --user-data-dir="${work}/profile" --virtual-time-budget=2000 \
  --window-size="${width},${height}" --screenshot="${work}/shot.png" \
  "file://${work}/index.html" >"${work}/chromium.log" 2>&1 || {
    cat "${work}/chromium.log" >&2
    exit 1
  }
mkdir -p "$(dirname "${out}")"
mv "${work}/shot.png" "${out}"
echo "render-dashboard: wrote ${out} (${width}x${height})"
