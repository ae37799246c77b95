package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A workload is what one operator is measured on: count custom resources of
// one kind, all created at once, and the rule that says one of them is done.
type workload struct {
	// operator is the directory under operators/.
	operator string
	gvr      schema.GroupVersionResource
	kind     string
	count    int
	// podsPerCR sizes the cluster: each fake node takes 110 pods.
	podsPerCR int
	// object is the custom resource named name.
	object func(name string) *unstructured.Unstructured
	// children, when set, is the done rule: the CR is done when it controls
	// that many objects of each kind. Otherwise it is done when Ready.
	children map[schema.GroupVersionResource]int
	// done says in words what counted as done, for the report.
	done string
	// created, when set, is a second point measured: when each CR controls
	// that many objects of each kind, Ready or not. The seed's operator
	// has no Ready: this is what it is compared with.
	created map[schema.GroupVersionResource]int
	// settled, when set, is what the cluster itself does with a CR's
	// children before the CR can be done (a Deployment available, a Job
	// succeeded), by kind: the floor, which waits for nothing, is also
	// timed until the cluster has done that with the floor's own children.
	settled map[schema.GroupVersionResource]func(*unstructured.Unstructured) bool
	// floor is what one CR strictly costs, counted by hand from what the
	// operator promises (docs/<operator>.md): the objects it must create
	// for the CR, by kind, besides its one status write. The floor replays
	// what the operator left, and refuses a run where that differs from
	// this count: an operator that made too much or too little would
	// otherwise set its own floor.
	floor map[schema.GroupVersionResource]int
}

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	servicesGVR    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	pdbsGVR        = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	jobsGVR        = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	pvcsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	secretsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// atLeastOne reports whether u's status counts at least one in field.
func atLeastOne(u *unstructured.Unstructured, field string) bool {
	n, _, _ := unstructured.NestedInt64(u.Object, "status", field)
	return n >= 1
}

// sizes are the workloads' flags.
type sizes struct {
	databases, mysqls, etcds, etcdSize, gordons, gordonReplicas int
}

// workloads returns the four operators' workloads, in the order they run.
func workloads(s sizes) []workload {
	return []workload{
		{
			operator: "database", kind: "Database", count: s.databases, podsPerCR: 1,
			gvr: schema.GroupVersionResource{Group: "zalando.org", Version: "v1", Resource: "databases"},
			object: func(name string) *unstructured.Unstructured {
				return custom("zalando.org/v1", "Database", name, map[string]any{"type": "mongo"})
			},
			done: "Ready: its pod runs and its Service exists",
			// A mongo Database: its pod and its NodePort Service (a mysql
			// one has a password Secret too).
			floor: map[schema.GroupVersionResource]int{podsGVR: 1, servicesGVR: 1},
		},
		{
			// A MySQL's server pod and its restore Job's pod.
			operator: "mysql-backup", kind: "MySQL", count: s.mysqls, podsPerCR: 2,
			gvr: schema.GroupVersionResource{Group: "otus.homework", Version: "v1", Resource: "mysqls"},
			object: func(name string) *unstructured.Unstructured {
				return custom("otus.homework/v1", "MySQL", name, map[string]any{
					"image": "mysql:5.7", "database": "bench", "password": "bench-password", "storage_size": "1Gi",
				})
			},
			done: "Ready: volumes bound, restore Job complete, server ready",
			settled: map[schema.GroupVersionResource]func(*unstructured.Unstructured) bool{
				deploymentsGVR: func(u *unstructured.Unstructured) bool { return atLeastOne(u, "availableReplicas") },
				jobsGVR:        func(u *unstructured.Unstructured) bool { return atLeastOne(u, "succeeded") },
			},
			// The data and backup volumes, the root password's Secret,
			// the server's Deployment and Service, the restore Job.
			floor: map[schema.GroupVersionResource]int{pvcsGVR: 2, secretsGVR: 1, deploymentsGVR: 1, servicesGVR: 1, jobsGVR: 1},
		},
		{
			operator: "etcd-cluster", kind: "EtcdCluster", count: s.etcds, podsPerCR: s.etcdSize,
			gvr: schema.GroupVersionResource{Group: "etcd.database.coreos.com", Version: "v1beta2", Resource: "etcdclusters"},
			object: func(name string) *unstructured.Unstructured {
				return custom("etcd.database.coreos.com/v1beta2", "EtcdCluster", name, map[string]any{
					"size": int64(s.etcdSize), "version": "3.2.13", "repository": "docker.io/prgcont/etcd",
				})
			},
			// Fake nodes run no etcd: no member ever answers, so no cluster
			// becomes Ready; what the operator can do is create it whole.
			children: map[schema.GroupVersionResource]int{podsGVR: s.etcdSize, servicesGVR: 2, pdbsGVR: 1},
			// A pod and a volume per member, the client and peer
			// Services, the PodDisruptionBudget.
			floor: map[schema.GroupVersionResource]int{podsGVR: s.etcdSize, pvcsGVR: s.etcdSize, servicesGVR: 2, pdbsGVR: 1},
			done:  fmt.Sprintf("its %d member pods, 2 Services and PodDisruptionBudget exist (fake nodes run no etcd)", s.etcdSize),
			// Run as with go run, the operator reaches the members through
			// the API server: each probe is a port-forward request (a POST),
			// and fake members never answer, so it keeps probing.
		},
		{
			operator: "gordon", kind: "Gordon", count: s.gordons, podsPerCR: s.gordonReplicas,
			gvr:     gordonsGVR,
			object:  func(name string) *unstructured.Unstructured { return gordon(name, s.gordonReplicas) },
			done:    fmt.Sprintf("Ready: %d pods running", s.gordonReplicas),
			created: map[schema.GroupVersionResource]int{podsGVR: s.gordonReplicas},
			floor:   map[schema.GroupVersionResource]int{podsGVR: s.gordonReplicas},
		},
	}
}

var gordonsGVR = schema.GroupVersionResource{Group: "operator.prgcont.cz", Version: "v1", Resource: "gordons"}

// gordon is the workshop's Gordon, which both the Go operator and the
// seed's Python one read.
func gordon(name string, replicas int) *unstructured.Unstructured {
	return custom("operator.prgcont.cz/v1", "Gordon", name, map[string]any{
		"gordon": map[string]any{"replicas": int64(replicas)},
	})
}

func custom(apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
}

// names are the CRs' names: w-0000, w-0001, ...
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return out
}
