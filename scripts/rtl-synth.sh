#!/usr/bin/env bash
# rtl-synth.sh [--check]
#
# Synthesizes the UART bridge RTL (rtl/lbrb_bridge.v and what it instantiates,
# default parameters: 100 MHz, 921600 baud, bursts of 256 words) with yosys,
# twice:
#   - synth_xilinx -family xcup -abc9 (AMD UltraScale+), then yosys's static
#     timing analysis (sta) on the mapped netlist;
#   - the generic synth, mapped to 6-input LUTs by ABC (vendor-neutral figures,
#     closest to what Quartus' ALMs hold), with ABC's logic depth.
# and writes the figures into docs/uart-bridge.md, between the markers
# <!-- rtl-synth:begin --> and <!-- rtl-synth:end -->.
#
# With --check it writes nothing and exits 1 when the block in the document
# differs from what the sources give now (the Go test rtl/synth_test.go runs
# this). Results are cached in .cache/rtl by a hash of the sources and the
# yosys version, so an unchanged tree is checked at once; yosys' reports
# (stat, sta, logs) are kept in .cache/rtl/synth-KEY/.
#
# Exit codes: 0 done (or up to date), 1 the block is out of date (--check),
# 2 bad usage, 3 yosys missing or failed.
set -euo pipefail

check=0
case "${1:-}" in
"") ;;
--check) check=1 ;;
*)
	echo "usage: $0 [--check]" >&2
	exit 2
	;;
esac
if [ $# -gt 1 ]; then
	echo "usage: $0 [--check]" >&2
	exit 2
fi

root=$(cd "$(dirname "$0")/.." && pwd)
doc=$root/docs/uart-bridge.md
if ! command -v yosys >/dev/null 2>&1; then
	echo "$0: yosys is not installed: run 'make rtl-tools'" >&2
	exit 3
fi
top=lbrb_bridge
srcs=$(cd "$root" && ls rtl/*.v | grep -v -e lbrb_example_)
version=$(yosys -V)

cache=$root/.cache/rtl
mkdir -p "$cache"
key=$( (echo "$version"; sed -n '/^# --- flows ---/,$p' "$0"; cd "$root" && cat $srcs) | sha256sum | cut -c1-16)
block=$cache/synth-$key.md

# --- flows ---
if [ ! -s "$block" ]; then
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	read_src="read_verilog -defer $(cd "$root" && for f in $srcs; do printf '%s ' "$root/$f"; done)"
	(yosys -q -l "$work/xcup.log" -p "$read_src; hierarchy -top $top; synth_xilinx -family xcup -top $top -flatten -noiopad -abc9; tee -q -o $work/xcup.stat stat; tee -q -o $work/xcup.sta sta" >/dev/null 2>"$work/xcup.err") &
	px=$!
	(yosys -l "$work/generic.log" -p "$read_src; hierarchy -top $top; proc; flatten; tee -q -o $work/mem.stat stat; synth -top $top -flatten -run begin:fine; opt -full; techmap; opt -fast; abc -lut 6 -script +strash;dch,-f;if,-K,6;mfs2;print_stats; opt -fast; tee -q -o $work/generic.stat stat" >/dev/null 2>"$work/generic.err") &
	pg=$!
	ok=1
	wait $px || ok=0
	wait $pg || ok=0
	if [ $ok -ne 1 ]; then
		echo "$0: yosys failed:" >&2
		cat "$work"/*.err >&2
		exit 3
	fi
	# Cell counts from stat: "     NAME   COUNT".
	cells() { awk -v re="$2" '$1 ~ re && $2 ~ /^[0-9]+$/ { n += $2 } END { print n + 0 }' "$1"; }
	luts=$(cells "$work/xcup.stat" '^LUT[1-6]$')
	ffs=$(cells "$work/xcup.stat" '^FD[RSCP]E$')
	b18=$(cells "$work/xcup.stat" '^RAMB18E2$')
	b36=$(cells "$work/xcup.stat" '^RAMB36E2$')
	lutram=$(cells "$work/xcup.stat" '^RAM(32|64|128|256)')
	carry=$(cells "$work/xcup.stat" '^CARRY[48]$')
	muxf=$(cells "$work/xcup.stat" '^MUXF[789]$')
	dsp=$(cells "$work/xcup.stat" '^DSP')
	arrival=$(sed -n 's/^Latest arrival time in .* is \([0-9][0-9]*\):$/\1/p' "$work/xcup.sta" | head -1)
	levels=$(awk '/^Latest arrival time/ { p = 1; next } p && /^$/ { exit } p && /\((LUT[1-6])\./ { n++ } END { print n + 0 }' "$work/xcup.sta")
	gluts=$(cells "$work/generic.stat" '^\$lut$')
	gffs=$(cells "$work/generic.stat" '^\$_(S|A)?(DFF|DFFE|SDFF|SDFFE|SDFFCE|DFFSR|DFFSRE)_')
	gmems=$(cells "$work/generic.stat" '^\$mem')
	gbits=$(awk '/Number of memory bits:/ { print $NF; exit }' "$work/mem.stat")
	glev=$(sed -n 's/.*lev = *\([0-9][0-9]*\).*/\1/p' "$work/generic.log" | tail -1)
	if [ -z "$arrival" ] || [ -z "$glev" ] || [ "$luts" -eq 0 ] || [ "$gluts" -eq 0 ]; then
		echo "$0: could not read the figures from yosys' output (in $work)" >&2
		trap - EXIT
		exit 3
	fi
	fmax=$(awk -v ps="$arrival" 'BEGIN { printf "%d", 1e6 / ps }')
	bram=$(awk -v a="$b18" -v b="$b36" 'BEGIN { printf "%g", a / 2 + b }')
	cat >"$work/block.md" <<EOF
Synthesized by \`scripts/rtl-synth.sh\` with $version, \`lbrb_bridge\` with its default parameters
(100 MHz, 921600 baud, bursts of 256 words, 100 ms partial-frame and 1 ms bus timeouts).

| flow | LUTs | flip-flops | block RAM | other |
|---|---|---|---|---|
| \`synth_xilinx -family xcup -abc9\` (UltraScale+) | $luts | $ffs | $b18 RAMB18E2 + $b36 RAMB36E2 ($bram BRAM36) | $carry CARRY4, $muxf MUXF7/8, $lutram LUTRAM, $dsp DSP |
| generic \`synth\`, ABC 6-LUT mapping | $gluts | $gffs | $gmems memories, $gbits bits | logic depth $glev LUTs |

Timing (\`sta\` on the UltraScale+ netlist): the latest arrival at a flip-flop input, from the clock pin
through the clock buffer, a flip-flop and $levels LUTs, is ${arrival} ps, so **Fmax ≤ $fmax MHz**. This is a
bound, not a prediction: yosys' cell models give LUT, flip-flop and buffer delays but no wire delays
(routing often doubles a path on UltraScale+) and no setup time, and CARRY4, MUXF7/8 and block RAM have
no timing arcs and count as zero. Vivado's routed timing report is the figure to trust; the design has
one clock and no multicycle paths.
EOF
	# Keep yosys' reports beside the block, for a look at the paths and cells;
	# the results of other sources are of no more use.
	rm -rf "$cache"/synth-*
	mkdir -p "$cache/synth-$key"
	cp "$work"/*.stat "$work"/*.sta "$work"/*.log "$cache/synth-$key/"
	cp "$work/block.md" "$block.tmp"
	mv "$block.tmp" "$block"
fi

# Put the block into the document (or compare with it).
begin='<!-- rtl-synth:begin -->'
end='<!-- rtl-synth:end -->'
if ! grep -qF "$begin" "$doc" || ! grep -qF "$end" "$doc"; then
	echo "$0: $doc has no $begin ... $end block" >&2
	exit 3
fi
new=$(mktemp)
trap 'rm -f "$new"' EXIT
awk -v b="$begin" -v e="$end" -v f="$block" '
	$0 == b { print; while ((getline l < f) > 0) print l; skip = 1; next }
	$0 == e { skip = 0 }
	!skip { print }
' "$doc" >"$new"
if cmp -s "$new" "$doc"; then
	exit 0
fi
if [ $check -eq 1 ]; then
	echo "$0: the synthesis figures in docs/uart-bridge.md are out of date: run scripts/rtl-synth.sh" >&2
	diff -u "$doc" "$new" >&2 || true
	exit 1
fi
cp "$new" "$doc"
echo "$0: updated the figures in docs/uart-bridge.md" >&2
