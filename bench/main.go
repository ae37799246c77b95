// Command bench measures what each operator costs (`make bench`): for each,
// many CRs created at once on a fresh local cluster with fake nodes, the
// operator running as a process as with `go run`; the time until every CR is
// done and each one's create-to-done latency, the API requests the operator
// sent (its own rest_client_requests_total), its writes in a stretch of
// idleness after, its peak memory; then the floor, a client that makes only
// the writes the CRs strictly need with the operator's client limits, on
// another fresh cluster; and for gordon the workshop's own Python operator.
//
// It writes latest.json, latest.md (the table) and latest.png (the
// latency distributions) into -out, and with -readme the table into that
// file between its bench markers (make bench: bench/README.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Printf("bench: "+format+"\n", args...)
}

func run() error {
	// The floor's client is throttled on purpose; client-go would log each
	// wait over a second.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	var (
		sz     sizes
		s      settings
		only   string
		out    string
		readme string
		seed   bool
	)
	flag.IntVar(&sz.databases, "databases", 1000, "Databases to create")
	flag.IntVar(&sz.mysqls, "mysqls", 1000, "MySQLs to create")
	flag.IntVar(&sz.etcds, "etcdclusters", 1000, "EtcdClusters to create")
	flag.IntVar(&sz.etcdSize, "etcd-size", 3, "members of each EtcdCluster")
	flag.IntVar(&sz.gordons, "gordons", 1000, "Gordons to create")
	flag.IntVar(&sz.gordonReplicas, "gordon-replicas", 3, "pods of each Gordon")
	flag.StringVar(&only, "operators", "database,mysql-backup,etcd-cluster,gordon", "operators to measure, comma-separated")
	flag.BoolVar(&seed, "seed", true, "also measure the workshop's Python gordon operator (needs python3-kubernetes)")
	flag.Float64Var(&s.qps, "kube-api-qps", 20, "client QPS of the operators and the floor (the operators' default)")
	flag.IntVar(&s.burst, "kube-api-burst", 30, "client burst of the operators and the floor (the operators' default)")
	flag.IntVar(&s.workers, "workers", 0, "the operators' --workers, custom resources reconciled at once (0: each operator's default)")
	flag.DurationVar(&s.idle, "idle", time.Minute, "how long each operator is watched idle after converging")
	flag.DurationVar(&s.timeout, "timeout", 20*time.Minute, "how long each operator may take to get every CR done")
	flag.StringVar(&s.cluster, "cluster", "bench", "name of the local cluster, created fresh for each measure and deleted after")
	flag.StringVar(&out, "out", "bench/results", "directory of latest.json, latest.md and latest.png, relative to the repository root")
	flag.StringVar(&readme, "readme", "", "a file whose bench markers get the table (bench/README.md)")
	flag.Parse()

	root, err := repoRoot()
	if err != nil {
		return err
	}
	s.root = root
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var chosen []workload
	for _, w := range workloads(sz) {
		if slices.Contains(strings.Split(only, ","), w.operator) {
			chosen = append(chosen, w)
		}
	}
	if len(chosen) == 0 {
		return fmt.Errorf("-operators=%s names none of database, mysql-backup, etcd-cluster, gordon", only)
	}
	var ops []string
	for _, w := range chosen {
		ops = append(ops, w.operator)
	}
	say("building %s", strings.Join(ops, ", "))
	if err := buildOperators(ctx, root, ops); err != nil {
		return err
	}

	rep := report{Operators: map[string]*result{}, Machine: describeMachine(root, s)}
	var absurd []string
	for _, w := range chosen {
		r, err := measure(ctx, s, w)
		if err != nil {
			return fmt.Errorf("%s: %w", w.operator, err)
		}
		if w.operator == "gordon" && seed {
			if r.Seed, err = measureSeed(ctx, s, w, sz.gordonReplicas); err != nil {
				return fmt.Errorf("seed gordon: %w", err)
			}
			// Both when every Gordon's pods were created: the seed has no Ready.
			speedup := round(r.Seed.Seconds / *r.CreatedSeconds, 2)
			r.SpeedupVsSeed = &speedup
		}
		rep.Operators[w.operator] = r
		say("%s: %s", w.operator, r.summary())
		if bad := r.absurd(); bad != "" {
			absurd = append(absurd, fmt.Sprintf("%s measured no real %s", w.operator, bad))
		}
	}
	if err := rep.write(out); err != nil {
		return err
	}
	if readme != "" {
		if err := rep.intoReadme(filepath.Join(root, readme)); err != nil {
			return err
		}
	}
	say("results in %s", out)
	if len(absurd) > 0 {
		return fmt.Errorf("the harness measured what no run can: %s", strings.Join(absurd, "; "))
	}
	return nil
}

// repoRoot is the repository's top directory: bench runs from anywhere in it.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s is not inside the repository (no go.work above it)", dir)
		}
	}
}
