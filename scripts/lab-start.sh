#!/usr/bin/env bash
# Copies the starters of lab LAB's tasks (the lab's "<!-- tasks: ... -->"
# line names them: labs/tasks/<task>/starter) into $LAB_WORK/<task>
# (default labs/tasks/work/<task>), where the learner writes the tasks, and
# says where they are. A copy that exists is the learner's work: it is kept.
#
# usage: scripts/lab-start.sh LAB   (make lab-start LAB=7)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

arg=${1:-}
known=$(for f in labs/[0-9][0-9]-*.md; do n=${f#labs/}; echo "${n%%-*}"; done | sed 's/^0//' | paste -sd, - | sed 's/,/, /g')
if ! [[ $arg =~ ^[0-9]+$ ]]; then
	echo "make lab-start needs the lab's number: make lab-start LAB=7 copies lab 7's starters; the labs are $known (labs/README.md)" >&2
	exit 2
fi
lab=$(compgen -G "labs/$(printf %02d $((10#$arg)))-*.md" || true)
if [ -z "$lab" ]; then
	echo "LAB=$arg: there is no lab $((10#$arg)); the labs are $known (labs/README.md)" >&2
	exit 2
fi
tasks=$(sed -n 's/^<!-- tasks: \(.*\) -->$/\1/p' "$lab")
if [ -z "$tasks" ]; then
	echo "$lab has no task to write code for: its steps are the work, and make lab-check LAB=$((10#$arg)) checks them"
	exit 0
fi
work=${LAB_WORK:-labs/tasks/work}
for task in $tasks; do
	if [ -e "$work/$task" ]; then
		echo "$work/$task exists: it is your work, and stays as it is (move it away to start the task again)"
		continue
	fi
	mkdir -p "$work"
	cp -R "labs/tasks/$task/starter" "$work/$task"
	echo "$work/$task: your copy of the task's starter; make lab-check LAB=$((10#$arg)) checks it"
done
