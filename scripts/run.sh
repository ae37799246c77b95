#!/usr/bin/env bash
# Runs the workshop end to end on the local cluster: starts the cluster,
# installs the CRDs, runs each operator named on the command line as a local
# process (as `go run` would), applies its samples and shows what came up.
# Ctrl-C stops the operators; the cluster stays (make cluster-down removes it).
#
# usage: scripts/run.sh OPERATOR...
# RUN_EXIT_WHEN_READY=1 stops the operators and returns once every sample is
# Ready, which is how the tests run this script.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PATH="$root/bin:$PATH"
cd "$root"
[ $# -gt 0 ] || { echo "usage: scripts/run.sh OPERATOR... (see operators/)" >&2; exit 2; }

step() { printf '\n==> %s\n' "$*"; }
say() { echo "  $*"; }
# shellcheck source=scripts/wait.sh
. "$root/scripts/wait.sh"

step "local cluster"
scripts/cluster.sh up

step "CRDs from crds/"
kubectl apply -f crds/
kubectl wait --for=condition=Established --timeout=60s -f crds/ >/dev/null

logs="$root/bin/logs"
mkdir -p "$logs"
pids=()
stop() {
	[ ${#pids[@]} -gt 0 ] || return 0
	step "stopping the operators"
	kill -INT "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	pids=()
}
trap '[ -z "$progressing" ] || kill "$progressing" 2>/dev/null; stop' EXIT
trap 'exit 130' INT TERM

port=8081
for op in "$@"; do
	step "$op operator"
	# Built as the tools are (no cgo, trimmed paths): the Kubernetes
	# libraries the control plane's build compiled are then reused, not
	# compiled again.
	progress "building bin/$op-operator" env CGO_ENABLED=0 go build -trimpath -o "bin/$op-operator" "./operators/$op/cmd"
	"bin/$op-operator" --health-probe-bind-address=":$port" >"$logs/$op.log" 2>&1 &
	pids+=($!)
	echo "running as pid $!, logs in bin/logs/$op.log"
	port=$((port + 1))
done

samples=()
for op in "$@"; do
	if [ -d "operators/$op/config/samples" ]; then samples+=("operators/$op/config/samples"); fi
done
step "samples"
for s in "${samples[@]}"; do kubectl apply -f "$s"; done

# real_node reports whether a node is not one of kwok's fake ones: pods
# really run there.
real_node() {
	kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.annotations.kwok\.x-k8s\.io/node}{"\n"}{end}' |
		grep -qv '^fake$'
}

step "waiting for every sample to be Ready"
start=$SECONDS
for s in "${samples[@]}"; do
	# Every custom resource reports Ready; the Secrets beside them do not.
	for obj in $(kubectl get -f "$s" -o name | grep -v '^secret/'); do
		# An etcd member is an etcd process: on fake nodes its pod exists but
		# nothing runs it, so the cluster cannot become Ready.
		if [[ $obj == etcdcluster* ]] && ! real_node; then
			echo "  $obj: not waited for: its members need a real node, and this cluster has fake nodes only"
			continue
		fi
		until kubectl wait --for=condition=Ready --timeout=5s "$obj" >/dev/null 2>&1; do
			if [ $((SECONDS - start)) -ge 180 ]; then
				echo "$obj is not Ready after 180s; its status and the operator logs say why:" >&2
				kubectl describe "$obj" >&2
				tail -n 30 "$logs"/*.log >&2
				exit 1
			fi
			echo "  $obj: waiting ($((SECONDS - start))s)"
		done
		echo "  $obj: Ready"
	done
done

step "what came up"
for s in "${samples[@]}"; do kubectl get -f "$s"; done
kubectl get pods,services

if [ "${RUN_EXIT_WHEN_READY:-}" = 1 ]; then
	exit 0
fi
printf '\nThe operators are running (logs in bin/logs/). Try:\n'
printf '  kubectl get databases\n  kubectl delete database mongo-db\n'
printf 'Press Ctrl-C to stop the operators.\n'
wait
