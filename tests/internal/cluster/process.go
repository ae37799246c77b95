package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Env returns the environment of a command a reader or a test runs against a
// cluster: the project's bin/ first on PATH, kubeconfig, and a kubectl
// discovery cache of its own in cacheDir. Every local cluster answers on the
// same address, one after another, so kubectl's cache, keyed by address,
// would otherwise mix them up.
//
// CLUSTER_REAL_NODE, for scripts/cluster.sh, is off: the suites that want
// the real node (scripts/node.sh) ask for it (Suite.RealNode), since only one
// cluster holds it at a time and its taint would keep the scale tests' pods
// off the fake nodes.
func Env(root, kubeconfig, cacheDir string) []string {
	return append(os.Environ(),
		"PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+kubeconfig,
		"KUBECACHEDIR="+cacheDir,
		"CLUSTER_REAL_NODE=off")
}

// StartGroup starts cmd in a process group of its own, like a command in a
// second terminal, so that StopGroup stops it and every child it started
// (`go run` compiles and runs a child, for one).
func StartGroup(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Start()
}

// StopGroup sends SIGINT to the process group of a command StartGroup
// started, as Ctrl-C would, and kills the group when it has not exited after
// fifteen seconds.
func StopGroup(cmd *exec.Cmd) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
}

// ScriptPID is the process ID on this machine of a Job's script named self
// (the operators' scripts set readonly self=NAME) that runs in a pod of
// namespace, 0 when none does. Local clusters' real node only: its
// containers are processes of this machine. A process of the same command
// line outside those pods (a unit test's script, a kind node's pod) is
// never named: the cgroup of a container's process names the container.
func (s *Suite) ScriptPID(ctx context.Context, namespace, self string) int {
	out, err := exec.CommandContext(ctx, "pgrep", "-f", "readonly self="+self).Output()
	if err != nil {
		return 0
	}
	ids, err := s.Run(ctx, "kubectl", "get", "pods", "-n", namespace, "-o",
		`jsonpath={.items[*].status.containerStatuses[*].containerID} {.items[*].status.initContainerStatuses[*].containerID}`)
	if err != nil {
		return 0
	}
	var containers []string
	for _, id := range strings.Fields(ids) {
		if _, id, ok := strings.Cut(id, "://"); ok && id != "" {
			containers = append(containers, id)
		}
	}
	for _, field := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(field); err == nil && inContainer(pid, containers) {
			return pid
		}
	}
	return 0
}

// inContainer reports whether process pid runs in one of containers (their
// IDs): its cgroup's path names the container, as containerd writes it
// (k8s.io/<ID>, or cri-containerd-<ID>.scope under systemd).
func inContainer(pid int, containers []string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	for _, id := range containers {
		if strings.Contains(string(b), id) {
			return true
		}
	}
	return false
}
