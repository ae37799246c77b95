package membership

import (
	"fmt"
	"strconv"
	"strings"
)

// OptionsFor returns the Options for cluster running etcd version (as in the
// image tag: "3.2.13", "v3.5.17", "3.6.0-rc.1"): learners from 3.4 on, leader
// moves from 3.3 on. The coreos workshop's default, 3.2.13, has neither.
func OptionsFor(cluster, version string) (Options, error) {
	major, minor, err := majorMinor(version)
	if err != nil {
		return Options{}, err
	}
	atLeast := func(ma, mi int) bool { return major > ma || (major == ma && minor >= mi) }
	return Options{Cluster: cluster, Learners: atLeast(3, 4), MoveLeader: atLeast(3, 3)}, nil
}

func majorMinor(version string) (int, int, error) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0, fmt.Errorf("etcd version %q: want MAJOR.MINOR.PATCH, like 3.5.17", version)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return 0, 0, fmt.Errorf("etcd version %q: want MAJOR.MINOR.PATCH, like 3.5.17", version)
	}
	return major, minor, nil
}
