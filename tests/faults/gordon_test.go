package faults

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The prgcont workshop's Gordon under faults: created, scaled up and down,
// its pods deleted, the operator, the watches and the API server killed.
// Ready means exactly N pods of its own run, none more; a pod with its
// labels that is not its own (a visitor on a fake node) is neither counted
// nor touched.
func gordonScenario(r *run) {
	const gordon = "gordon/gordoncluster"
	r.apply(`apiVersion: v1
kind: Pod
metadata:
  name: gordoncluster-visitor
  labels:
    app.kubernetes.io/name: gordon
    app.kubernetes.io/instance: gordoncluster
    visitor: "yes"
spec:
  nodeName: node-000000
  containers:
  - name: visitor
    image: workshop.local/gordon:visitor
`)
	others := r.bystanders("pod/gordoncluster-visitor")
	faults := append(r.common(), fault{"delete some of its pods", func(r *run) string {
		forced := r.rng.IntN(2) == 0
		out, err := r.try(time.Minute, "get", "pods", "-n", r.ns, "-l", "app.kubernetes.io/instance=gordoncluster,!visitor",
			"-o", "jsonpath={.items[*].metadata.name}")
		pods := strings.Fields(out)
		if err != nil || len(pods) == 0 {
			return ""
		}
		r.pick.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
		pods = pods[:1+r.pick.IntN(len(pods))]
		args := append([]string{"delete", "pods", "-n", r.ns, "--wait=false"}, pods...)
		if forced {
			args = append(args, "--grace-period=0", "--force")
		}
		if _, err := r.try(time.Minute, args...); err != nil {
			return ""
		}
		return fmt.Sprintf("deleted %d of its pods: %s", len(pods), strings.Join(pods, " "))
	}})
	// check reads what Ready promises: exactly n pods of its own, none
	// being deleted, and the status says n.
	check := func(n int) func() error {
		return func() error {
			uid := r.must("get", "-n", r.ns, gordon, "-o", "jsonpath={.metadata.uid}")
			out := r.must("get", "pods", "-n", r.ns, "-o",
				`jsonpath={range .items[*]}{.metadata.name} {.metadata.ownerReferences[?(@.controller==true)].uid} {.metadata.deletionTimestamp}{"\n"}{end}`)
			var own []string
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[1] == uid {
					own = append(own, f[0])
				}
			}
			var errs []error
			if len(own) != n {
				errs = append(errs, fmt.Errorf("ready with %d pods of its own that are not being deleted, want exactly %d: %v", len(own), n, own))
			}
			if got := r.must("get", "-n", r.ns, gordon, "-o", "jsonpath={.status.replicas}"); got != strconv.Itoa(n) {
				errs = append(errs, fmt.Errorf("status.replicas says %s, want %d", got, n))
			}
			return errors.Join(errs...)
		}
	}

	struck := r.step("create", 10*time.Second, faults, func() {
		r.must("apply", "-n", r.ns, "-f", "operators/gordon/config/samples/gordoncluster.yaml")
	})
	r.wait(gordon, 4*time.Minute)
	r.holds(struck, gordon, check(3))
	for range 3 {
		n := 1 + r.rng.IntN(5)
		struck := r.step(fmt.Sprintf("scale to %d", n), 10*time.Second, faults, func() {
			r.must("patch", "-n", r.ns, gordon, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"gordon":{"replicas":%d}}}`, n))
		})
		r.wait(gordon, 4*time.Minute)
		r.holds(struck, gordon, check(n))
	}
	r.must("delete", "-n", r.ns, gordon, "--wait=false")
	r.waitGone(gordon, 3*time.Minute)
	r.checkUntouched(others)
}
