#!/usr/bin/env bash
# cpu-work.sh: what a run cost this machine's CPUs, from /proc/stat.
#
# usage: mark=$(scripts/cpu-work.sh)     a mark: the CPUs' busy and idle time so far
#        scripts/cpu-work.sh "$mark"     since the mark: how busy the CPUs were, the
#                                        CPU time spent (every process's, the
#                                        clusters' included) and the least wall time
#                                        that work takes on this machine's cores
# Busy is user, nice, system, irq and softirq time; idle is idle and iowait;
# time a hypervisor stole is neither.
set -euo pipefail

ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat; }

if [ $# = 0 ]; then
	echo "$(ticks) $(date +%s)"
	exit 0
fi
read -r busy0 idle0 t0 <<<"$1"
read -r busy1 idle1 <<<"$(ticks)"
hz=$(getconf CLK_TCK)
cpus=$(getconf _NPROCESSORS_ONLN)
busy=$((busy1 - busy0)) idle=$((idle1 - idle0)) wall=$(($(date +%s) - t0))
[ $((busy + idle)) -gt 0 ] || { echo "no CPU time passed"; exit 0; }
echo "$((100 * busy / (busy + idle))) % of $cpus CPUs busy over ${wall}s: $((busy / hz)) CPU-seconds of work, at least $((busy / hz / cpus))s on $cpus cores"
