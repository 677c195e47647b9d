#!/usr/bin/env bash
# rtl-tools.sh: make sure Verilator and yosys are installed, from Debian's
# packages (apt), for the RTL tests (rtl/) and the synthesis script
# (scripts/rtl-synth.sh), with the C++ compiler and make that Verilator's
# builds need (its package does not depend on them). Quick and silent when
# everything is already there.
#
# It installs only when a tool is missing, which needs root and apt (CI runs
# as root). Exit 0 when the tools run, 3 when they could not be installed
# (infrastructure), 2 on bad usage.
set -euo pipefail

if [ $# -ne 0 ]; then
	echo "usage: $0 (no arguments)" >&2
	exit 2
fi

missing=()
command -v verilator >/dev/null 2>&1 || missing+=(verilator)
command -v yosys >/dev/null 2>&1 || missing+=(yosys)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

echo "rtl-tools: installing ${missing[*]} from Debian's packages" >&2
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "rtl-tools: ${missing[*]} missing and not running as root: run 'apt-get install ${missing[*]}' as root" >&2
		exit 3
	fi
	sudo=(sudo -n)
fi
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get update -qq ||
	! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
	echo "rtl-tools: apt-get could not install ${missing[*]}" >&2
	exit 3
fi
for t in "${missing[@]}"; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "rtl-tools: $t still missing after apt-get install" >&2
		exit 3
	fi
done
echo "rtl-tools: $(verilator --version), $(yosys -V)" >&2
