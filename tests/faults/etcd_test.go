package faults

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The prgcont workshop's EtcdCluster under faults: created, given keys,
// scaled to 5 and back to 3, with members' pods and volumes deleted, a
// member stopped while the cluster shrinks, the operator, the watches and
// the API server killed. Ready means the members etcd lists are the spec's
// size, and every key written before is there.
func etcdScenario(r *run) {
	const cluster = "etcdcluster/example-etcd-cluster"
	r.op, r.opBinary, r.opArgs = "etcd-cluster-"+r.ns, "etcd-cluster", []string{"--namespace=" + r.ns}
	func() {
		procs.Lock()
		defer procs.Unlock()
		if err := r.startOperator(); err != nil {
			r.t.Fatal(err)
		}
	}()
	r.t.Cleanup(func() {
		procs.Lock()
		defer procs.Unlock()
		_ = suite.KillOperator(context.Background(), r.op)
	})
	labels := "app: etcd\n    etcd_cluster: example-etcd-cluster"
	r.apply(fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: example-etcd-cluster-notes
  labels:
    %s
data:
  note: not the operator's
`, labels))
	others := r.bystanders("configmap/example-etcd-cluster-notes")

	members := "etcd_cluster=example-etcd-cluster"
	memberVolume := deleteClaim(func(r *run) string {
		out, err := r.try(time.Minute, "get", "pvc", "-n", r.ns, "-l", members, "-o", "jsonpath={.items[*].metadata.name}")
		if names := strings.Fields(out); err == nil && len(names) > 0 {
			return names[r.pick.IntN(len(names))]
		}
		return ""
	})
	memberPod := fault{"delete an etcd member's pod", func(r *run) string {
		forced := r.rng.IntN(2) == 0
		out, err := r.try(time.Minute, "get", "pods", "-n", r.ns, "-l", members, "-o", "jsonpath={.items[*].metadata.name}")
		pods := strings.Fields(out)
		if err != nil || len(pods) == 0 {
			return ""
		}
		pod := pods[r.pick.IntN(len(pods))]
		args, how := []string{"delete", "pod", "-n", r.ns, pod, "--wait=false"}, "gracefully"
		if forced {
			args, how = append(args, "--grace-period=0", "--force"), "forced"
		}
		if _, err := r.try(time.Minute, args...); err != nil {
			return ""
		}
		return fmt.Sprintf("pod %s deleted (%s)", pod, how)
	}}
	faults := append(r.common(), memberPod, memberVolume)

	// member names a running member's pod that is not being deleted (a
	// removed member's pod may take its grace period to go).
	member := func() string {
		out, err := r.try(time.Minute, "get", "pods", "-n", r.ns, "-l", members, "--field-selector=status.phase=Running",
			"-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}`)
		var pods []string
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) == 1 {
				pods = append(pods, f[0])
			}
		}
		if err != nil || len(pods) == 0 {
			return "no-running-member"
		}
		return pods[r.pick.IntN(len(pods))]
	}
	// gone is what etcdctl meets when the member asked goes under it:
	// the member times out (its peers lost it), or its container is
	// killed (exit 137: the operator replaces a member whose volume a
	// fault deleted). Everything etcdctl does here is idempotent: a
	// client asks another member.
	gone := []string{"context deadline exceeded", "command terminated with exit code 137"}
	etcdctl := func(args ...string) string {
		r.t.Helper()
		out, err := r.execIn(member, gone, append([]string{"etcdctl"}, args...)...)
		if err != nil {
			r.t.Fatal(err)
		}
		return out
	}
	keys := 20 + r.rng.IntN(80)
	value := func(i int) string { return fmt.Sprintf("v%d-%s", i, r.ns) }
	// check reads what Ready promises: size members, every key.
	check := func(size int) func() error {
		return func() error {
			var errs []error
			if list := strings.Split(strings.TrimSpace(etcdctl("member", "list")), "\n"); len(list) != size {
				errs = append(errs, fmt.Errorf("ready with %d members, want %d:\n%s", len(list), size, strings.Join(list, "\n")))
			}
			got := strings.Split(strings.TrimSpace(etcdctl("get", "/f/", "--prefix")), "\n")
			want := map[string]string{}
			for i := range keys {
				want[fmt.Sprintf("/f/k%03d", i)] = value(i)
			}
			for i := 0; i+1 < len(got); i += 2 {
				if want[got[i]] == got[i+1] {
					delete(want, got[i])
				}
			}
			if len(want) > 0 {
				errs = append(errs, fmt.Errorf("%d of %d keys lost or changed at size %d", len(want), keys, size))
			}
			return errors.Join(errs...)
		}
	}

	struck := r.step("create", 15*time.Second, faults, func() {
		r.must("apply", "-n", r.ns, "-f", "operators/etcd-cluster/config/samples/example-etcd-cluster.yaml")
	})
	r.wait(cluster, 6*time.Minute)
	var put strings.Builder
	for i := range keys {
		fmt.Fprintf(&put, "etcdctl put /f/k%03d %s >/dev/null || exit 1\n", i, value(i))
	}
	// The keys go in with one exec, again (the puts are the same) while
	// the member asked is gone: Ready may have been written a moment
	// before the operator saw what a fault did (a member's volume
	// deleted: that member is being replaced; soak seed 832867675 put
	// into its container as it was killed), and a client retries, on
	// another member.
	if _, err := r.execIn(member, gone, "sh", "-c", put.String()); err != nil {
		r.t.Fatal(err)
	}
	r.logf("put %d keys", keys)
	r.holds(struck, cluster, check(3))

	struck = r.step("scale to 5", 20*time.Second, faults, func() {
		r.must("patch", "-n", r.ns, cluster, "--type=merge", "-p", `{"spec":{"size":5}}`)
	})
	r.wait(cluster, 8*time.Minute)
	r.holds(struck, cluster, check(5))

	stopped := fault{"an etcd member stopped (SIGSTOP) for 20s", func(r *run) string {
		out, err := r.try(time.Minute, "get", "pods", "-n", r.ns, "-l", members, "-o", "jsonpath={.items[*].metadata.name}")
		pods := strings.Fields(out)
		if err != nil || len(pods) == 0 {
			return ""
		}
		pod := pods[r.pick.IntN(len(pods))]
		pgrep, err := exec.Command("pgrep", "-f", "--", "--name="+pod+" --data-dir").Output()
		if err != nil {
			return ""
		}
		pid, err := strconv.Atoi(strings.Fields(string(pgrep))[0])
		if err != nil || syscall.Kill(pid, syscall.SIGSTOP) != nil {
			return ""
		}
		time.Sleep(20 * time.Second)
		_ = syscall.Kill(pid, syscall.SIGCONT)
		return fmt.Sprintf("etcd of %s (pid %d) stopped for 20s, then let go on", pod, pid)
	}}
	struck = r.step("scale to 3", 20*time.Second, append(faults, stopped), func() {
		r.must("patch", "-n", r.ns, cluster, "--type=merge", "-p", `{"spec":{"size":3}}`)
	})
	r.wait(cluster, 8*time.Minute)
	r.holds(struck, cluster, check(3))

	r.must("delete", "-n", r.ns, cluster, "--wait=false")
	r.waitGone(cluster, 3*time.Minute)
	r.checkUntouched(others)
}
