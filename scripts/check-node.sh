#!/usr/bin/env bash
# Proves that a node runs what the labs rely on, on the cluster of kubectl's
# current context: a pod of the netshoot image (curl, dig, nc) with a volume, Ready on NODE,
# its logs and kubectl exec, a NodePort Service at the node's address
# (IP), cluster DNS and a Service's DNS name in the pod. With "machine", the
# node is this machine (the local cluster's real node, scripts/node.sh
# check): its ClusterIPs and 127.0.0.1 NodePorts answer here too, and no
# Service may take the node port its API server listens on. kind's node is
# a container (scripts/kind.sh check): they answer in it, not here.
#
# usage: scripts/check-node.sh NODE IP [machine]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
node=${1:?usage: scripts/check-node.sh NODE IP [machine]}
ip=${2:?usage: scripts/check-node.sh NODE IP [machine]}
machine=${3:-}
ns=real-node-check

say() { echo "check-node.sh: $*" >&2; }
die() { say "$*"; exit 1; }
# shellcheck source=scripts/wait.sh
. "$root/scripts/wait.sh"

# api_port_refused proves that no Service can be given the node port the
# API server listens on. kube-proxy sends a node port of every local
# address, 127.0.0.1 included, to the Service's pods, and refuses it while
# the Service has none: such a Service would take the API server from this
# machine, kube-proxy's own connection with it. The local cluster's node
# ports stop below the ports kwokctl gives its control plane (scripts/cluster.sh).
api_port_refused() {
	local server api_port out
	server=$(kubectl config view --minify -o 'jsonpath={.clusters[0].cluster.server}')
	api_port=${server##*:}
	if ! [[ $server =~ ^https://127\.0\.0\.1:[0-9]+$ ]] || [ "$api_port" -lt 30000 ] || [ "$api_port" -gt 32767 ]; then
		say "the API server ($server) listens outside the node port range"
		return
	fi
	if out=$(kubectl -n "$ns" create -f - 2>&1 <<EOT
apiVersion: v1
kind: Service
metadata: {name: api-port}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, nodePort: $api_port}]
EOT
	); then
		kubectl -n "$ns" delete service api-port --wait >/dev/null 2>&1 || true
		die "a Service was given node port $api_port, where the API server ($server) listens: kube-proxy would take it from this machine"
	fi
	grep -q "not in the valid range" <<<"$out" || die "a Service given node port $api_port: $out"
	say "node port $api_port, the API server's, is refused to Services"
}

kubectl delete namespace "$ns" --ignore-not-found --wait >/dev/null
kubectl create namespace "$ns" >/dev/null
kubectl -n "$ns" apply -f - >/dev/null <<EOT
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 10Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  nodeSelector: {kubernetes.io/hostname: $node}
  containers:
  - name: web
    image: nicolaka/netshoot:v0.13
    command: [bash, -c]
    args:
    - |
      echo hello from the node > /data/index.html
      echo "serving /data"
      # One connection at a time: the checks below retry.
      while true; do printf 'HTTP/1.0 200 OK\r\n\r\n%s\n' "\$(cat /data/index.html)" | nc -l -p 8080 -q 1 >/dev/null; done
    ports: [{containerPort: 8080}]
    readinessProbe: {exec: {command: [test, -f, /data/index.html]}, periodSeconds: 1}
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
EOT
wait_until "pod with a volume Ready on $node" 120 kubectl -n "$ns" wait --for=condition=Ready pod/web --timeout=2s
kubectl -n "$ns" logs web | grep -q "serving /data" || die "kubectl logs does not show the pod's output"
say "kubectl logs works"
out=$(kubectl -n "$ns" exec web -- cat /data/index.html)
[ "$out" = "hello from the node" ] || die "kubectl exec read '$out' from the volume"
say "kubectl exec works; the pod wrote to its volume"
port=$(kubectl -n "$ns" get service web -o 'jsonpath={.spec.ports[0].nodePort}')
if [ -n "$machine" ]; then
	cluster_ip=$(kubectl -n "$ns" get service web -o 'jsonpath={.spec.clusterIP}')
	poll 30 curl -fsS --max-time 2 "http://$cluster_ip/" || die "ClusterIP $cluster_ip does not answer from this machine"
	say "ClusterIP $cluster_ip answers from this machine"
	poll 30 curl -fsS --max-time 2 "http://127.0.0.1:$port/" || die "NodePort 127.0.0.1:$port does not answer"
	say "NodePort $port answers on 127.0.0.1"
	api_port_refused
fi
poll 30 curl -fsS --max-time 2 "http://$ip:$port/" || die "NodePort $ip:$port does not answer"
say "NodePort $port answers on the node's address $ip"
want=$(kubectl get service kubernetes -o 'jsonpath={.spec.clusterIP}')
out=$(kubectl -n "$ns" exec web -- dig +short +search kubernetes.default) || true
[ "$out" = "$want" ] || die "cluster DNS: kubernetes.default resolved to '$out' in a pod, want $want"
poll 30 kubectl -n "$ns" exec web -- curl -fsS --max-time 2 "http://web.$ns.svc.cluster.local/" ||
	die "a pod cannot reach its own Service by its DNS name"
say "cluster DNS resolves kubernetes.default and Service names in pods"
kubectl delete namespace "$ns" --wait >/dev/null
say "node $node works"
