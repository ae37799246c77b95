package membership

import (
	"fmt"
	"strconv"
	"strings"
)

// OptionsFor returns the Options for cluster running etcd version (as in the
// image tag: "3.2.13", "v3.5.17", "3.6.0-rc.1"): learners from 3.4 on, leader
// moves from 3.3 on. The coreos workshop's default, 3.2.13, has neither.
//
// While an upgrade rolls, members still run older releases (running): the
// Options are then those of the oldest of them all, since a call an older
// member does not know fails on it (a 3.2 leader answers MoveLeader
// Unimplemented, a cluster of 3.3 members refuses a learner).
func OptionsFor(cluster, version string, running ...string) (Options, error) {
	major, minor, err := majorMinor(version)
	if err != nil {
		return Options{}, err
	}
	for _, v := range running {
		ma, mi, err := majorMinor(v)
		if err != nil {
			return Options{}, err
		}
		if ma < major || (ma == major && mi < minor) {
			major, minor = ma, mi
		}
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

// UpgradeStep returns nil when members running the versions running may
// move to version to: etcd moves a cluster one minor version up at a time,
// never down and never across a major version. The CRD refuses an edit of
// spec.version that breaks this; two edits in a row (3.4 to 3.5, then 3.6
// before every member ran 3.5) would still ask members of 3.4 for 3.6.
func UpgradeStep(running []string, to string) error {
	major, minor, err := majorMinor(to)
	if err != nil {
		return err
	}
	for _, v := range running {
		ma, mi, err := majorMinor(v)
		if err != nil {
			return err
		}
		if ma != major || minor < mi || minor > mi+1 {
			return fmt.Errorf("members run etcd %s, and %s is not the same minor version or the next one: "+
				"etcd moves a cluster one minor version up at a time, never down; set spec.version to a %d.%d or %d.%d release, "+
				"and to the next one once every member runs it", v, to, ma, mi, ma, mi+1)
		}
	}
	return nil
}
