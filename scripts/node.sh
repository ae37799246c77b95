#!/usr/bin/env bash
# Makes this machine a real node of a local cluster (scripts/cluster.sh), so
# that the workshop's pods really run: containerd and runc from Debian, the
# CNI bridge, and kubelet and kube-proxy built from the control plane's pinned
# module. Pods of the workshop's manifests land on it, because the fake nodes
# get the taint workshop.local/fake-node=true:NoSchedule while it is there
# (scale tests tolerate it to use them). It also runs the cluster DNS
# (CoreDNS); scripts/local-provisioner gives its claims real directories.
#
# One file of over 300 lines, on purpose: its commands (up, down, load,
# admit, status) are the steps of one node's life and share its state (the
# processes' pid files, the node's lock, containerd's directories), which
# files of their own would each have to know.
#
# The machine has one real node: kubelet, kube-proxy and the node ports are
# the machine's. It belongs to one cluster at a time: up for a second cluster
# fails (status 4) and says which cluster holds it; `down` that one first.
#
# Pod and service addresses never leave the machine: pods are on the bridge
# workshop0 (10.244.0.0/24), and the service range, kind's pod range
# (10.244.0.0/16) and kwok's fake pod range (10.0.0.0/16) are routed to that
# bridge too, where a packet kube-proxy has not rewritten finds no one
# (this kernel has no dummy devices).
#
# usage: scripts/node.sh up|down|status|check [NAME]
#        scripts/node.sh mirror NAME REGISTRY URL
#        scripts/node.sh admit NAME PREFIX...
#        scripts/node.sh import NAME IMAGE...
#        scripts/node.sh load NAME ARCHIVE...
#        scripts/node.sh forget NAME PREFIX
#   up      join cluster NAME; status 3 when this machine cannot run
#           containers (it says what is missing), 4 when another cluster
#           holds the node
#   down    remove the node from NAME: its pods, processes, rules and routes
#   status  print the cluster holding the node; status 1 when none does
#   check   prove the node works: a pod's logs and exec, ClusterIP, NodePort,
#           cluster DNS, a volume
#   mirror  pull the images of REGISTRY (a host, ghcr.io) from the registry
#           at URL (http://127.0.0.1:5000) instead, as a disconnected
#           cluster pulls from its mirror (scripts/olm.sh runs one)
#   admit   images whose names start with a PREFIX have a stand-in on the
#           node (in its mirror, or imported): their pods land on it
#   import  build and import images that scripts/images.sh makes only on
#           demand (olm)
#   load    import docker archives (scripts/olm-images.sh's) into the node
#   forget  remove the node's images whose names start with PREFIX: its
#           containerd is the machine's, kept from cluster to cluster, and a
#           pod would run an image an earlier cluster left under the same
#           tag instead of pulling the new one (scripts/olm.sh forgets the
#           catalog's before OLM pulls them through the mirror)
# NAME defaults to $CLUSTER_NAME, else "workshop". Logs and pids are in the
# cluster's directory (~/.kwok/clusters/NAME/real-node); images and containerd's
# store in ~/.kwok/real-node, kept from one cluster to the next.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/toolbox.sh
. "$root/scripts/toolbox.sh"
cluster_script "$@"
node_dir=$dir/real-node
# Machine-wide: containerd's sockets and state, and who holds the node.
run=/run/workshop-node
store=$workdir/real-node
sock=$run/containerd.sock

node_name=real-node
node_label=workshop.local/real-node
fake_taint=workshop.local/fake-node
pod_cidr=10.244.0.0/24
pod_range=10.244.0.0/16
fake_pod_range=10.0.0.0/16
bridge=workshop0

say() { echo "node.sh: $*" >&2; }
die() { say "$*"; exit 1; }

k() { kubectl --kubeconfig "$dir/kubeconfig-$name.yaml" "$@"; }

# shellcheck source=scripts/wait.sh
. "$root/scripts/wait.sh"

# missing prints what this machine lacks to run a real node, one item a line.
missing() {
	local c f
	[ "$(uname -s)" = Linux ] || echo "Linux (this is $(uname -s))"
	[ "$(id -u)" = 0 ] || echo "root (containerd, kubelet and kube-proxy run as root)"
	for c in containerd containerd-shim-runc-v2 ctr runc iptables iptables-save ip conntrack debootstrap openssl setsid flock; do
		command -v "$c" >/dev/null || echo "command $c"
	done
	for f in bridge host-local portmap loopback; do
		[ -x "/usr/lib/cni/$f" ] || echo "CNI plugin /usr/lib/cni/$f"
	done
	grep -qw overlay /proc/filesystems 2>/dev/null || echo "the overlay filesystem"
	[ -d /sys/fs/cgroup/memory ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || echo "cgroups"
}

# stop PIDFILE NAME: SIGTERM, then SIGKILL after ten seconds.
stop() {
	local pid tries=100
	alive "$1" "$2" || { rm -f "$1"; return 0; }
	pid=$(cat "$1")
	kill "$pid" 2>/dev/null || true
	while alive "$1" "$2" && [ $((tries -= 1)) -gt 0 ]; do sleep 0.1; done
	if alive "$1" "$2"; then kill -9 "$pid" 2>/dev/null || true; sleep 0.2; fi
	rm -f "$1"
	say "stopped $2 (pid $pid)"
}

# adopt NAME CONFIG finds the process started with --config CONFIG when its
# pid file is gone (the cluster's directory was deleted under it), so that
# stop can stop it.
adopt() {
	local pid
	alive "$pidfiles/$1.pid" "$1" && return 0
	pid=$(pgrep -f -x ".*$1 --config $2( .*)?" | head -n 1) || return 0
	mkdir -p "$pidfiles"
	echo "$pid" >"$pidfiles/$1.pid"
}

# start NAME LOG COMMAND...: runs COMMAND in a session of its own, so it
# outlives this script, as kwokctl's components do. It must not inherit the
# locks' descriptors (8 here, 9 in cluster.sh): it would hold them forever.
start() {
	local what=$1 log=$2
	shift 2
	setsid nohup "$@" </dev/null >>"$log" 2>&1 8>&- 9>&- &
	echo $! >"$pidfiles/$what.pid"
	say "started $what (pid $!, log $log)"
}

owner() { cat "$run/owner" 2>/dev/null || true; }

# host_ip is the machine's own address, the one its default route leaves
# from: a loopback node IP would leave the node without addresses.
host_ip() {
	ip -4 route get 1.1.1.1 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "src") { print $(i + 1); exit } }'
}

# cert CN ORG: a client certificate for CN signed by the cluster's CA.
cert() {
	local cn=$1 org=$2 out=$node_dir/pki/$3
	[ -f "$out.crt" ] && return 0
	openssl req -new -newkey rsa:2048 -nodes -keyout "$out.key" -subj "/O=$org/CN=$cn" -out "$out.csr" 2>/dev/null
	openssl x509 -req -in "$out.csr" -CA "$dir/pki/ca.crt" -CAkey "$dir/pki/ca.key" -CAcreateserial \
		-days 3650 -out "$out.crt" 2>/dev/null
	rm -f "$out.csr"
}

kubeconfig() {
	local file=$node_dir/$1.kubeconfig server
	server=$(k config view -o 'jsonpath={.clusters[0].cluster.server}')
	cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $name
  cluster: {server: "$server", certificate-authority: "$dir/pki/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$node_dir/pki/$1.crt", client-key: "$node_dir/pki/$1.key"}
contexts:
- name: $1
  context: {cluster: $name, user: $1}
current-context: $1
EOF
}

containerd_config() {
	cat <<EOF
version = 2
root = "$store/containerd"
state = "$run/containerd"

[grpc]
  address = "$sock"

[ttrpc]
  address = "$sock.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$("$root/scripts/images.sh" pause-image)"
  # The machine lacks CAP_SYS_RESOURCE: without this every sandbox fails with
  # runc's "can't get final child's PID from pipe".
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  # Registry mirrors (scripts/node.sh mirror): read at every pull.
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$run/certs.d"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$run/net.d"
    max_conf_num = 1
EOF
}

cni_config() {
	cat <<EOF
{
  "cniVersion": "1.0.0",
  "name": "workshop",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$pod_cidr"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$run/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

kubelet_config() {
	cat <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$sock
# The kernel shows cgroup v1, and the machine is a container of its own.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$dir/pki/ca.crt"}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: ["$dns_ip"]
resolvConf: /etc/resolv.conf
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
# The images cannot be pulled again: never collect them, never evict for disk.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
serializeImagePulls: false
EOF
}

kube_proxy_config() {
	cat <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
hostnameOverride: $node_name
clientConnection: {kubeconfig: "$node_dir/kube-proxy.kubeconfig"}
clusterCIDR: $pod_range
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# Leave the machine's conntrack table size alone.
conntrack: {maxPerCore: 0}
EOF
}

# coredns_manifest is kind's cluster DNS, at the address the kubelet gives pods.
# Its Corefile is kubeadm's (and so kind's): the cache keeps no answer of
# cluster.local, so a pod's name resolves as soon as its endpoint is published,
# not up to 30 s later (a member of a new etcd cluster that asked for a peer
# before the peer's pod had an address would wait that long to find it).
coredns_manifest() {
	local forward="forward . /etc/resolv.conf"
	# A loopback resolver would be the pod's own loopback.
	if grep -Eq '^nameserver (127\.|::1)' /etc/resolv.conf; then forward=""; fi
	cat <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:53 {
        errors
        health :8080
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
            ttl 30
        }
        $forward
        cache 30 {
            disable success cluster.local
            disable denial cluster.local
        }
        loop
        reload
    }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      priorityClassName: system-cluster-critical
      nodeSelector: {$node_label: "true"}
      dnsPolicy: Default
      containers:
      - name: coredns
        image: registry.k8s.io/coredns/coredns:v1.13.1
        imagePullPolicy: Never
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        readinessProbe:
          httpGet: {path: /ready, port: 8181}
          periodSeconds: 2
        livenessProbe:
          httpGet: {path: /health, port: 8080}
        volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
      volumes:
      - name: config
        configMap: {name: coredns, items: [{key: Corefile, path: Corefile}]}
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns, kubernetes.io/name: CoreDNS}
spec:
  clusterIP: $dns_ip
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
EOF
}

# spellings prints the ways a pod may spell image name $1.
spellings() {
	local n=$1
	echo "$n"
	if [[ $n != */* ]]; then
		echo "docker.io/library/$n" "docker.io/$n"
		return 0
	fi
	case ${n%%/*} in
	docker.io) echo "${n#docker.io/}" ;;
	*.* | *:* | localhost) ;;
	*) echo "docker.io/$n" ;;
	esac
}

# placement_policy sends a pod to the fake nodes when one of its images has
# no local stand-in (scripts/images.sh, or a prefix admitted with `admit`):
# mongo, an operator's own image, a test's made-up one. The real node could
# not start it, and on a fake node it is simulated, as on a cluster without a
# real node. It runs at admission, so no manifest changes; a pod bound to a
# node by name is left alone.
placement_policy() {
	local list="" t s prefixes=""
	for t in $("$root/scripts/images.sh" tags); do
		for s in $(spellings "$t"); do list+="${list:+, }'$s'"; done
	done
	if [ -f "$node_dir/admitted" ]; then
		while read -r t; do prefixes+=" || c.image.startsWith('$t')"; done <"$node_dir/admitted"
	fi
	local has="c, c.image in [$list]$prefixes"
	cat <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: workshop-images-without-stand-in}
spec:
  failurePolicy: Ignore
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  - name: not-bound-yet
    expression: "!has(object.spec.nodeName) || object.spec.nodeName == ''"
  - name: an-image-without-stand-in
    expression: >-
      !object.spec.containers.all($has) ||
      (has(object.spec.initContainers) && !object.spec.initContainers.all($has))
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        (has(object.spec.nodeSelector)
          ? [JSONPatch{op: "add", path: "/spec/nodeSelector/type", value: "kwok"}]
          : [JSONPatch{op: "add", path: "/spec/nodeSelector", value: {"type": "kwok"}}]) +
        (has(object.spec.tolerations)
          ? [JSONPatch{op: "add", path: "/spec/tolerations/-",
              value: Object.spec.tolerations{key: "$fake_taint", operator: "Exists", effect: "NoSchedule"}}]
          : [JSONPatch{op: "add", path: "/spec/tolerations",
              value: [Object.spec.tolerations{key: "$fake_taint", operator: "Exists", effect: "NoSchedule"}]}])
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: workshop-images-without-stand-in}
spec:
  policyName: workshop-images-without-stand-in
EOF
}

# placement IMAGE prints the node type the placement policy gives a new pod
# of IMAGE: kwok for the fake nodes, nothing for the real node. A server-side
# dry run goes through admission and creates nothing.
placement() {
	k create --dry-run=server -o 'jsonpath={.spec.nodeSelector.type}' -f - <<EOF 2>/dev/null
apiVersion: v1
kind: Pod
metadata: {name: workshop-placement-probe, namespace: default}
spec: {containers: [{name: probe, image: "$1"}]}
EOF
}

# placed IMAGE WHERE succeeds once the API server places pods of IMAGE on
# WHERE (kwok, or "" for the real node). A policy just applied takes a
# moment to reach the API server's admission: until then new pods would go
# where the previous policy sent them.
placed() {
	local where
	where=$(placement "$1") && [ "$where" = "$2" ]
}

# routes keeps pod and service addresses on this machine (see the top). The
# CNI bridge plugin takes the bridge as it finds it.
routes() {
	ip link show "$bridge" >/dev/null 2>&1 || ip link add "$bridge" type bridge
	ip link set "$bridge" up
	local r
	for r in "$service_cidr" "$pod_range" "$fake_pod_range"; do
		ip route replace "$r" dev "$bridge"
	done
}

# cluster_settings reads the service range and checks that the cluster was
# created by this project's cluster.sh, with what a real node needs: its
# node ports below the control plane's ports, which the node's kube-proxy
# would otherwise take from this machine (scripts/cluster.sh).
cluster_settings() {
	service_cidr=$(k get servicecidr kubernetes -o 'jsonpath={.spec.cidrs[0]}')
	local kubernetes_ip prefix
	kubernetes_ip=$(k get service kubernetes -n default -o 'jsonpath={.spec.clusterIP}')
	prefix=${kubernetes_ip%.*}
	dns_ip=$prefix.10
	if ! openssl x509 -in "$dir/pki/admin.crt" -noout -ext subjectAltName 2>/dev/null | grep -q "IP Address:$kubernetes_ip\b" ||
		! grep -q -- --kubelet-client-certificate "$dir/kwok.yaml" ||
		! grep -q -- --service-node-port-range "$dir/kwok.yaml"; then
		say "cluster $name was created without the settings a real node needs (an older scripts/cluster.sh):"
		say "recreate it: scripts/cluster.sh down $name && scripts/cluster.sh up $name"
		exit 3
	fi
}

lock() {
	mkdir -p "$run"
	exec 8>"$run/lock"
	flock 8
}

up() {
	local start=$SECONDS holder lacks
	lacks=$(missing)
	if [ -n "$lacks" ]; then
		say "this machine cannot run a real node; it lacks:"
		while IFS= read -r l; do say "  - $l"; done <<<"$lacks"
		say "on Debian: apt-get install containerd runc containernetworking-plugins iptables conntrack debootstrap openssl (as root)"
		exit 3
	fi
	[ -f "$dir/kwok.yaml" ] || die "cluster $name does not exist: run scripts/cluster.sh up $name"
	"$root/scripts/cluster.sh" kubeconfig "$name" >/dev/null
	lock
	holder=$(owner)
	if [ -n "$holder" ] && [ "$holder" != "$name" ]; then
		if [ -f "$workdir/clusters/$holder/kwok.yaml" ] && alive "$workdir/clusters/$holder/real-node/pids/kubelet.pid" kubelet; then
			say "the real node belongs to cluster $holder; run scripts/node.sh down $holder first"
			exit 4
		fi
		say "cluster $holder left the real node behind: cleaning up"
		(name=$holder dir=$workdir/clusters/$holder node_dir=$workdir/clusters/$holder/real-node pidfiles=$workdir/clusters/$holder/real-node/pids teardown)
	fi
	cluster_settings

	"$root/scripts/build-tools.sh" kubernetes-node coredns
	mkdir -p "$node_dir/pki" "$pidfiles" "$run/net.d" "$store"
	echo "$name" >"$run/owner"

	sysctl -qw net.ipv4.ip_forward=1
	[ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ] || sysctl -qw net.bridge.bridge-nf-call-iptables=1
	routes
	cni_config >"$run/net.d/10-workshop.conflist"

	containerd_config >"$run/containerd.toml"
	if ! alive "$pidfiles/containerd.pid" containerd; then
		start containerd "$node_dir/containerd.log" containerd --config "$run/containerd.toml"
		wait_until "containerd answers" 30 ctr --address "$sock" version
	fi
	"$root/scripts/images.sh" import "$sock" "$store/imported"

	local ip
	ip=$(host_ip)
	[ -n "$ip" ] || die "cannot find this machine's address (no default route)"
	cert "system:node:$node_name" system:nodes kubelet
	cert system:kube-proxy system:node-proxier kube-proxy
	kubeconfig kubelet
	kubeconfig kube-proxy
	kubelet_config >"$node_dir/kubelet.yaml"
	kube_proxy_config >"$node_dir/kube-proxy.yaml"
	if ! alive "$pidfiles/kubelet.pid" kubelet; then
		start kubelet "$node_dir/kubelet.log" kubelet --config "$node_dir/kubelet.yaml" \
			--kubeconfig "$node_dir/kubelet.kubeconfig" --root-dir "$store/kubelet" \
			--cert-dir "$node_dir/pki" --hostname-override "$node_name" --node-ip "$ip" \
			--node-labels "$node_label=true"
	fi
	if ! alive "$pidfiles/kube-proxy.pid" kube-proxy; then
		start kube-proxy "$node_dir/kube-proxy.log" kube-proxy --config "$node_dir/kube-proxy.yaml"
	fi
	wait_until "node $node_name Ready" 120 k wait --for=condition=Ready "node/$node_name" --timeout=2s
	k uncordon "$node_name" >/dev/null

	# Pods of unchanged manifests must land here: fake nodes take only pods
	# that tolerate the taint (the scale tests do).
	k taint nodes -l type=kwok "$fake_taint=true:NoSchedule" --overwrite >/dev/null
	placement_policy | k apply -f - >/dev/null
	wait_until "placement policy in force" 60 placed workshop.local/no-stand-in:v0 kwok
	coredns_manifest | k apply -f - >/dev/null
	wait_until "cluster DNS ready at $dns_ip" 120 k -n kube-system rollout status deployment/coredns --timeout=2s
	say "real node $node_name ($ip) joined cluster $name in $((SECONDS - start))s"
}

# teardown stops everything the node runs for cluster $name and removes its
# rules, routes and mounts. The cluster may already be gone.
teardown() {
	local pod
	adopt kubelet "$node_dir/kubelet.yaml"
	adopt kube-proxy "$node_dir/kube-proxy.yaml"
	adopt containerd "$run/containerd.toml"
	if [ -f "$dir/kubeconfig-$name.yaml" ] && k get --raw /readyz --request-timeout=5s >/dev/null 2>&1; then
		# The kubelet stops the pods' containers and frees their addresses
		# (CNI DEL) as the API server deletes them.
		k cordon "$node_name" >/dev/null 2>&1 || true
		k -n kube-system delete deployment coredns --ignore-not-found --wait=false >/dev/null 2>&1 || true
		if alive "$pidfiles/kubelet.pid" kubelet; then
			k delete pods -A --field-selector "spec.nodeName=$node_name" --grace-period=1 --timeout=60s >/dev/null 2>&1 || true
		fi
		k delete mutatingadmissionpolicybinding,mutatingadmissionpolicy workshop-images-without-stand-in \
			--ignore-not-found >/dev/null 2>&1 || true
		k taint nodes -l type=kwok "$fake_taint-" >/dev/null 2>&1 || true
		k delete node "$node_name" --ignore-not-found >/dev/null 2>&1 || true
	fi
	stop "$pidfiles/kubelet.pid" kubelet
	if alive "$pidfiles/kube-proxy.pid" kube-proxy; then
		stop "$pidfiles/kube-proxy.pid" kube-proxy
	fi
	# kube-proxy removes every rule it wrote.
	kube-proxy --cleanup >/dev/null 2>&1 || true

	# What the kubelet did not stop: kill it, without CNI.
	if alive "$pidfiles/containerd.pid" containerd; then
		local c=(ctr --address "$sock" -n k8s.io)
		for pod in $("${c[@]}" tasks ls -q 2>/dev/null); do
			"${c[@]}" tasks kill -s SIGKILL "$pod" >/dev/null 2>&1 || true
		done
		sleep 0.5
		for pod in $("${c[@]}" containers ls -q 2>/dev/null); do
			"${c[@]}" tasks rm -f "$pod" >/dev/null 2>&1 || true
			"${c[@]}" containers rm "$pod" >/dev/null 2>&1 || true
		done
	fi
	stop "$pidfiles/containerd.pid" containerd
	cleanup_machine
	rm -rf "$run/owner" "$run/certs.d" "$node_dir/admitted"
}

# cleanup_machine removes the machine-wide leftovers: network namespaces and
# mounts of pods, the CNI rules of the bridge network, the bridge, the routes.
cleanup_machine() {
	local ns m chain
	for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^cni-/ { print $1 }'); do
		ip netns delete "$ns" 2>/dev/null || true
	done
	# Innermost first.
	while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done < <(awk -v a="$store/kubelet" -v b="$run/containerd" 'index($2, a) == 1 || index($2, b) == 1 { print $2 }' /proc/mounts | sort -r)
	rm -rf "$store/kubelet" "$run/ipam"
	# The bridge plugin's masquerade rules carry the network's name; each
	# jumps to a chain of its own.
	local rules chains
	rules=$(iptables-save -t nat | grep -F -- '-A POSTROUTING' | grep -F 'name: \"workshop\"' || true)
	if [ -n "$rules" ]; then
		chains=$(sed -n 's/.* -j \(CNI-[0-9a-f]*\)$/\1/p' <<<"$rules" | sort -u)
		{
			echo '*nat'
			echo "${rules//-A POSTROUTING/-D POSTROUTING}"
			for chain in $chains; do printf ':%s - [0:0]\n-X %s\n' "$chain" "$chain"; done
			echo COMMIT
		} | iptables-restore --noflush || say "could not remove every CNI rule: see iptables-save -t nat"
	fi
	# The kubelet's own chains (kube-proxy --cleanup removed kube-proxy's).
	local table
	while iptables -D INPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
	while iptables -D OUTPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
	for table in filter nat mangle; do
		for chain in KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT; do
			if iptables -t "$table" -F "$chain" 2>/dev/null; then iptables -t "$table" -X "$chain" 2>/dev/null || true; fi
		done
	done
	ip link delete "$bridge" 2>/dev/null || true # its routes go with it
}

down() {
	# Quiet when there is nothing to do: cluster.sh down always calls this.
	[ -d "$run" ] || [ -d "$pidfiles" ] || return 0
	lock
	local holder
	holder=$(owner)
	if [ -n "$holder" ] && [ "$holder" != "$name" ]; then
		say "the real node belongs to cluster $holder, not $name: left alone"
		return 0
	fi
	[ -n "$holder" ] || [ -d "$pidfiles" ] || return 0
	teardown
	rm -rf "$pidfiles"
	say "removed the real node from cluster $name"
}

# check proves the node works (scripts/check-node.sh), from this machine too.
check() {
	[ "$(owner)" = "$name" ] || die "cluster $name has no real node: run scripts/node.sh up $name"
	KUBECONFIG="$dir/kubeconfig-$name.yaml" "$root/scripts/check-node.sh" "$node_name" "$(host_ip)" machine
	say "the real node of cluster $name works"
}

pidfiles=$node_dir/pids
case $cmd in
up) up ;;
down) down ;;
status)
	holder=$(owner)
	[ -n "$holder" ] || exit 1
	echo "$holder"
	;;
check) check ;;
mirror)
	[ $# = 4 ] || die "usage: scripts/node.sh mirror NAME REGISTRY URL"
	[ "$(owner)" = "$name" ] || die "cluster $name has no real node: run scripts/node.sh up $name"
	grep -q config_path "$run/containerd.toml" ||
		die "the node's containerd predates registry mirrors: restart it (scripts/node.sh down $name; scripts/node.sh up $name)"
	mkdir -p "$run/certs.d/$3"
	printf 'server = "https://%s"\n\n[host."%s"]\n  capabilities = ["pull", "resolve"]\n' "$3" "$4" >"$run/certs.d/$3/hosts.toml"
	say "images of $3 are pulled from $4"
	;;
forget)
	[ $# = 3 ] || die "usage: scripts/node.sh forget NAME PREFIX"
	[ "$(owner)" = "$name" ] || die "cluster $name has no real node: run scripts/node.sh up $name"
	mapfile -t refs < <(ctr --address "$sock" -n k8s.io images ls -q | awk -v p="$3" 'index($0, p) == 1')
	[ ${#refs[@]} = 0 ] || ctr --address "$sock" -n k8s.io images rm "${refs[@]}" >/dev/null
	say "forgot ${#refs[@]} image(s) named $3...: pods pull them anew"
	;;
load)
	[ $# -ge 3 ] || die "usage: scripts/node.sh load NAME ARCHIVE..."
	[ "$(owner)" = "$name" ] || die "cluster $name has no real node: run scripts/node.sh up $name"
	for f in "${@:3}"; do
		[ -f "$f" ] || die "load: no archive $f"
		# shellcheck disable=SC2046 # flags, or none
		ctr --address "$sock" -n k8s.io images import $("$root/scripts/release.sh" import-flags "$f") "$f" >/dev/null
	done
	say "loaded $(($# - 2)) image archive(s) into $node_name"
	;;
import)
	[ $# -ge 3 ] || die "usage: scripts/node.sh import NAME IMAGE..."
	[ "$(owner)" = "$name" ] || die "cluster $name has no real node: run scripts/node.sh up $name"
	"$root/scripts/images.sh" import "$sock" "$store/imported" "${@:3}"
	;;
admit)
	[ $# -ge 3 ] || die "usage: scripts/node.sh admit NAME PREFIX..."
	[ "$(owner)" = "$name" ] || die "cluster $name has no real node: run scripts/node.sh up $name"
	for p in "${@:3}"; do
		[[ $p != *"'"* ]] || die "admit: $p: a prefix cannot hold a quote"
		grep -qxF "$p" "$node_dir/admitted" 2>/dev/null || echo "$p" >>"$node_dir/admitted"
	done
	placement_policy | k apply -f - >/dev/null
	for p in "${@:3}"; do
		poll 60 placed "${p}placement-probe" "" ||
			die "admit: 60s on, pods of ${p}... still go to the fake nodes"
	done
	say "pods of images named ${*:3}... land on $node_name"
	;;
*)
	sed -n '/^# usage:/,/^set -euo/{/^set/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
	;;
esac
