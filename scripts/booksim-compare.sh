#!/usr/bin/env bash
# booksim-compare.sh [-r REPEATS] [-l "LOADS"] [-a min|ugal] [BOOKSIM]
#
# Runs BookSim2 and golden/tin side by side on the same network — the
# 1,056-node Dragonfly of SC'18 §IV (scripts/booksim/dragonfly1056_*.cfg;
# golden's booksim-dragonfly preset), single-flit packets, uniform random
# traffic — interleaved, REPEATS times per load, each under GNU time, and
# prints per load:
#
#   speed    golden's packets per CPU-second / BookSim's (min and median
#            over the repeats; BookSim's packets are its accepted packet
#            rate x nodes x cycles, as it prints no count)
#   memory   golden's max RSS / BookSim's (max and median)
#   latency  golden's average packet latency against BookSim's, and the
#   accepted accepted flit rates, relative differences
#
# BOOKSIM is the booksim binary (or set $BOOKSIM); nothing is downloaded or
# built but labrunner. Needs bash, GNU time (/usr/bin/time), awk, go.
# (GNU time writes "Command exited with non-zero status 255" before its
# figures when BookSim succeeds: the figures are the file's last line.)
# Exit 0 when every load has speed >= 3, memory <= 1 and latency and
# accepted rate within 10%; 1 otherwise; 2 on bad usage.
set -euo pipefail

reps=3
loads="0.1 0.3 0.5"
alg=min
usage() {
	echo "usage: $0 [-r REPEATS] [-l \"0.1 0.3 0.5\"] [-a min|ugal] [BOOKSIM]   (or BOOKSIM=/path/to/booksim)" >&2
	exit 2
}
while getopts "r:l:a:h" o; do
	case $o in
	r) reps=$OPTARG ;;
	l) loads=$OPTARG ;;
	a) alg=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
booksim=${1:-${BOOKSIM:-}}
[ -n "$booksim" ] || usage
[ -x "$booksim" ] || { echo "$0: $booksim is not an executable booksim" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "$0: needs GNU time as /usr/bin/time (apt-get install time)" >&2; exit 2; }
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "$0: -r $reps: want a number of repeats" >&2; exit 2; }
case $alg in
min) galg=minimal ;;
ugal) galg=ugal ;;
*) echo "$0: -a $alg: want min or ugal" >&2; exit 2 ;;
esac
for l in $loads; do
	awk -v l="$l" 'BEGIN { exit !(l > 0 && l <= 1) }' || { echo "$0: load $l: want 0 < load <= 1" >&2; exit 2; }
done

root=$(cd "$(dirname "$0")/.." && pwd)
cfg=$root/scripts/booksim/dragonfly1056_$alg.cfg
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The binary goes to the tree's ignored cache: go build leaves a binary that is up to date as it is, so a
# second comparison does not link labrunner again.
bin=$root/.cache/booksim-compare/labrunner
mkdir -p "$(dirname "$bin")"
(cd "$root" && go build -o "$bin" ./cmd/labrunner)

nodes=1056
rows=$work/rows.tsv
: >"$rows"
run_booksim() { # load rep
	/usr/bin/time -f "%U %S %M" -o "$work/b.time" "$booksim" "$cfg" injection_rate="$1" >"$work/b.log" 2>&1 || true
	awk -v load="$1" -v rep="$2" -v nodes=$nodes -v tf="$work/b.time" '
		BEGIN { while ((getline t < tf) > 0) last = t; split(last, a, " "); cpu = a[1] + a[2]; rss = a[3] }
		/Time taken is/ { cyc = $4 }
		/Overall Traffic Statistics/ { ov = 1 }
		ov && /^Packet latency average/ { lat = $5 }
		ov && /^Accepted packet rate average/ { apr = $6 }
		ov && /^Accepted flit rate average/ { afr = $6 }
		END {
			if (cyc == "" || lat == "") { print "booksim run at load " load " printed no statistics" > "/dev/stderr"; exit 1 }
			printf "booksim\t%s\t%s\t%.6f\t%.3f\t%.5f\t%.0f\t%d\n", load, rep, cpu, lat, afr, apr * nodes * cyc, rss
		}' "$work/b.log" >>"$rows"
}
run_golden() { # load rep
	/usr/bin/time -f "%U %S %M" -o "$work/g.time" "$bin" golden simulate --tsv --out "$work/out" \
		--preset booksim-dragonfly --alg "$galg" --loads "$1" synthetic >"$work/g.tsv" 2>"$work/g.err"
	awk -v load="$1" -v rep="$2" -v tf="$work/g.time" '
		BEGIN { while ((getline t < tf) > 0) last = t; split(last, a, " "); cpu = a[1] + a[2]; rss = a[3] }
		NR == 2 { printf "golden\t%s\t%s\t%.6f\t%.3f\t%.5f\t%d\t%d\n", load, rep, cpu, $2, $3, $4, rss }' "$work/g.tsv" >>"$rows"
}
for l in $loads; do
	for r in $(seq 1 "$reps"); do
		# Interleaved, the order alternating, so that the machine's load
		# falls on both alike.
		if [ $((r % 2)) -eq 1 ]; then
			run_booksim "$l" "$r"
			run_golden "$l" "$r"
		else
			run_golden "$l" "$r"
			run_booksim "$l" "$r"
		fi
		echo "load $l repeat $r/$reps done" >&2
	done
done

echo "# per run: tool load rep cpu_s latency accepted packets maxrss_kB"
cat "$rows"
echo
awk -F'\t' '
	function median(v, n,   i, j, t) {
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	{ key = $2 SUBSEP $3; cpu[$1, key] = $4; lat[$1, key] = $5; acc[$1, key] = $6; pk[$1, key] = $7; rss[$1, key] = $8
	  if (!($2 in seen)) { seen[$2] = 1; order[++nl] = $2 }
	  reps[$2] = ($3 > reps[$2] ? $3 : reps[$2]) }
	END {
		bad = 0
		printf "load\tspeed(min)\tspeed(median)\tmemory(max)\tmemory(median)\tlatency golden/booksim\taccepted golden/booksim\n"
		for (i = 1; i <= nl; i++) {
			l = order[i]; n = reps[l]
			smin = 1e18; mmax = 0; lg = lb = ag = ab = 0
			for (r = 1; r <= n; r++) {
				k = l SUBSEP r
				s[r] = (pk["golden", k] / cpu["golden", k]) / (pk["booksim", k] / cpu["booksim", k])
				m[r] = rss["golden", k] / rss["booksim", k]
				smin = s[r] < smin ? s[r] : smin; mmax = m[r] > mmax ? m[r] : mmax
				lg += lat["golden", k] / n; lb += lat["booksim", k] / n
				ag += acc["golden", k] / n; ab += acc["booksim", k] / n
			}
			smed = median(s, n); mmed = median(m, n)
			dl = (lg - lb) / lb; da = (ag - ab) / ab
			printf "%s\t%.1fx\t%.1fx\t%.2f\t%.2f\t%.1f / %.1f ns (%+.1f%%)\t%.4f / %.4f (%+.1f%%)\n", l, smin, smed, mmax, mmed, lg, lb, 100 * dl, ag, ab, 100 * da
			if (smin < 3 || mmax > 1 || dl > 0.1 || dl < -0.1 || da > 0.1 || da < -0.1) bad = 1
		}
		exit bad
	}' "$rows"
