#!/usr/bin/env bash
# check-report.sh RUN_DIR_OR_REPORT [SCREENSHOT.png]
#
# Opens a run's report.html in headless Chromium (Debian's `chromium`
# package: apt-get install chromium) in a window 1400 px wide, and checks
# what only a browser can tell:
#   - every embedded plot decoded (the report's own script writes
#     data-plots="OK/TOTAL" on <body> once the page has loaded);
#   - the page fits the window: no table, and the page itself, wider than
#     1400 px, no number cell whose content overflows (data-layout="ok");
# then takes a full-page screenshot to look at (CHECK_REPORT_HEIGHT px
# tall, default 6000; CHECK_REPORT_WIDTH overrides the 1400).
# Exits 0 when both hold, 1 otherwise, 2 on bad usage or without Chromium.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 RUN_DIR|report.html [screenshot.png]" >&2
	exit 2
fi
target=$1
if [ -d "$target" ]; then
	target=${target%/}/report.html
fi
if [ ! -f "$target" ]; then
	echo "$0: $target does not exist (run \`labrunner report RUN_DIR\` first)" >&2
	exit 2
fi
shot=${2:-$(dirname "$target")/report.png}
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$chrome" ]; then
	echo "$0: no chromium on PATH: apt-get install chromium (or make report-check, which installs it)" >&2
	exit 2
fi
url="file://$(cd "$(dirname "$target")" && pwd)/$(basename "$target")"
width=${CHECK_REPORT_WIDTH:-1400}
height=${CHECK_REPORT_HEIGHT:-6000}

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
	--disable-background-networking --disable-component-update --disable-sync
	--user-data-dir="$profile" --hide-scrollbars)

# 1. Plots and layout: read the DOM after the load event, at the width checked.
dom=$(timeout 60 "$chrome" "${flags[@]}" --window-size="$width,900" --dump-dom "$url" 2>/dev/null || true)
plots=$(printf '%s' "$dom" | grep -o 'data-plots="[0-9]*/[0-9]*"' | head -1 | sed 's/data-plots="\(.*\)"/\1/')
layout=$(printf '%s' "$dom" | grep -o 'data-layout="[^"]*"' | head -1 | sed 's/data-layout="\(.*\)"/\1/')
if [ -z "$plots" ] || [ -z "$layout" ]; then
	echo "$0: the report did not finish loading in Chromium (no data-plots or data-layout attribute)" >&2
	exit 1
fi
ok=${plots%/*}
total=${plots#*/}

# 2. A screenshot of the page's top part (verdicts and plots).
timeout 60 "$chrome" "${flags[@]}" --window-size="$width,$height" --screenshot="$shot" "$url" >/dev/null 2>&1 || true
if [ ! -s "$shot" ]; then
	echo "$0: Chromium made no screenshot at $shot" >&2
	exit 1
fi

echo "report: $target"
echo "plots rendered: $ok of $total"
echo "layout at ${width} px: $layout"
echo "screenshot: $shot"
status=0
if [ "$total" -eq 0 ] || [ "$ok" -ne "$total" ]; then
	echo "$0: not every plot rendered" >&2
	status=1
fi
if [ "$layout" != "ok" ]; then
	echo "$0: the page does not fit ${width} px: $layout" >&2
	status=1
fi
exit $status
