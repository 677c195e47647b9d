#!/usr/bin/env bash
# check-report.sh RUN_DIR_OR_REPORT [SCREENSHOT.png]
#
# Opens a run's report.html in headless Chromium (Debian's `chromium`
# package: apt-get install chromium), checks that every embedded plot
# decoded (the report's own script writes data-plots="OK/TOTAL" on <body>
# once the page has loaded), and takes a full-width screenshot to look at.
# Exits 0 when every plot rendered, 1 otherwise, 2 on bad usage.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 RUN_DIR|report.html [screenshot.png]" >&2
	exit 2
fi
target=$1
if [ -d "$target" ]; then
	target=$target/report.html
fi
if [ ! -f "$target" ]; then
	echo "$0: $target does not exist (run \`labrunner report RUN_DIR\` first)" >&2
	exit 2
fi
shot=${2:-$(dirname "$target")/report.png}
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$chrome" ]; then
	echo "$0: no chromium on PATH: apt-get install chromium" >&2
	exit 2
fi
url="file://$(cd "$(dirname "$target")" && pwd)/$(basename "$target")"

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
	--disable-background-networking --disable-component-update --disable-sync
	--user-data-dir="$profile" --hide-scrollbars)

# 1. Every plot decoded: read the DOM after the load event.
dom=$(timeout 60 "$chrome" "${flags[@]}" --dump-dom "$url" 2>/dev/null || true)
plots=$(printf '%s' "$dom" | grep -o 'data-plots="[0-9]*/[0-9]*"' | head -1 | sed 's/data-plots="\(.*\)"/\1/')
if [ -z "$plots" ]; then
	echo "$0: the report did not finish loading in Chromium (no data-plots attribute)" >&2
	exit 1
fi
ok=${plots%/*}
total=${plots#*/}

# 2. A screenshot as tall as the page's top part (verdicts and plots).
timeout 60 "$chrome" "${flags[@]}" --window-size=1440,${CHECK_REPORT_HEIGHT:-5000} --screenshot="$shot" "$url" >/dev/null 2>&1 || true
if [ ! -s "$shot" ]; then
	echo "$0: Chromium made no screenshot at $shot" >&2
	exit 1
fi

echo "report: $target"
echo "plots rendered: $ok of $total"
echo "screenshot: $shot"
if [ "$total" -eq 0 ] || [ "$ok" -ne "$total" ]; then
	echo "$0: not every plot rendered" >&2
	exit 1
fi
