#!/usr/bin/env bash
# Renders trace files into OUTDIR/report.html, report.md and a screenshot report.png (headless
# Chromium), for committing a run's report under docs/results/ (docs/report.md).
# Usage: scripts/report_screenshot.sh TRACES.jsonl [MORE.jsonl ...] OUTDIR
#   D2K: the d2k binary (default build/ci/src/cli/d2k); D2K_CHROMIUM: the browser (default chromium)
#   REPORT_TITLE: the page title; REPORT_HEIGHT: screenshot height in pixels (default 2400)
set -euo pipefail
if [ $# -lt 2 ]; then echo "usage: $0 TRACES.jsonl [MORE.jsonl ...] OUTDIR" >&2; exit 2; fi
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${!#}"
traces=("${@:1:$#-1}")
d2k="${D2K:-$here/build/ci/src/cli/d2k}"
browser="${D2K_CHROMIUM:-chromium}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
"$d2k" --dataset "$here/dataset" report "${traces[@]}" --title "${REPORT_TITLE:-D2K-Bench report}" \
  --html "$out/report.html" --markdown "$out/report.md"
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
# --no-sandbox: Chromium's sandbox refuses to start as root; the page is our own file.
"$browser" --headless --disable-gpu --no-sandbox --no-first-run --user-data-dir="$profile" --hide-scrollbars \
  --window-size=1280,"${REPORT_HEIGHT:-2400}" --screenshot="$out/report.png" "file://$out/report.html" 2>/dev/null
echo "report: $out/report.html, $out/report.md, $out/report.png"
