package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// report is latest.json.
type report struct {
	Operators map[string]*result `json:"operators"`
	Machine   machine            `json:"machine"`
}

// machine says where and how the figures were measured.
type machine struct {
	Date         string  `json:"date"`
	Commit       string  `json:"commit"`
	CPUs         int     `json:"cpus"`
	CPUModel     string  `json:"cpu_model"`
	MemoryGiB    float64 `json:"memory_gib"`
	Kernel       string  `json:"kernel"`
	Go           string  `json:"go"`
	KubeAPIQPS   float64 `json:"kube_api_qps"`
	KubeAPIBurst int     `json:"kube_api_burst"`
	Workers      int     `json:"workers,omitempty"`
}

// order is the order of the table's rows.
var order = []string{"database", "mysql-backup", "etcd-cluster", "gordon"}

func describeMachine(root string, s settings) machine {
	m := machine{
		Date: time.Now().UTC().Format(time.RFC3339), CPUs: runtime.NumCPU(), Go: runtime.Version(),
		KubeAPIQPS: s.qps, KubeAPIBurst: s.burst, Workers: s.workers,
	}
	if out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPUModel = field(string(b), "model name")
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kib float64
		if _, err := fmt.Sscanf(field(string(b), "MemTotal"), "%f kB", &kib); err == nil {
			m.MemoryGiB = round(kib/1024/1024, 1)
		}
	}
	return m
}

// field is the value of the first "key: value" line of text with key.
func field(text, key string) string {
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// summary is the result on one line, as bench prints it.
func (r *result) summary() string {
	s := fmt.Sprintf("%d CRs in %.1fs (p50 %.0f ms, p99 %.0f ms), %.2f writes and %.2f reads per CR, "+
		"%d writes idle, peak RSS %.1f MiB (at the end %.1f file-mapped, %.1f anonymous; live heap %.1f), %.1f CPU s, "+
		"machine busy %.0f %%, floor %.1fs (x%.2f, machine busy %.0f %%)",
		r.CRs, r.Seconds, r.P50Ms, r.P99Ms, r.WritesPerCR, r.ReadsPerCR, r.IdleWrites, r.PeakRSSMiB, r.RSSFileMiB, r.RSSAnonMiB, r.HeapLiveMiB,
		r.CPUSeconds, r.BusyPercent, r.FloorSeconds, r.RatioToFloor, r.FloorBusyPercent)
	if r.FloorSettledSeconds != nil {
		s += fmt.Sprintf(", the floor's children settled by the cluster in %.1fs", *r.FloorSettledSeconds)
	}
	if r.SpeedupVsSeed != nil {
		s += fmt.Sprintf(", pods created in %.1fs where the seed took %.1fs (speedup x%.2f)", *r.CreatedSeconds, r.Seed.Seconds, *r.SpeedupVsSeed)
	}
	return s
}

// table is the report as a markdown table.
func (rep report) table() string {
	var b strings.Builder
	b.WriteString("| operator | CRs | seconds | p50 ms | p99 ms | writes/CR | floor writes/CR | reads/CR | idle writes | peak RSS MiB | CPU s | floor s | ratio to floor | vs seed |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, op := range order {
		r, ok := rep.Operators[op]
		if !ok {
			continue
		}
		seed := "-"
		if r.SpeedupVsSeed != nil {
			seed = fmt.Sprintf("x%.2f (pods created in %.1f s, seed %.1f s)", *r.SpeedupVsSeed, *r.CreatedSeconds, r.Seed.Seconds)
		}
		floor := fmt.Sprintf("%.1f", r.FloorSeconds)
		if r.FloorSettledSeconds != nil {
			floor += fmt.Sprintf(" (settled %.1f)", *r.FloorSettledSeconds)
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.0f | %.0f | %.2f | %.2f | %.2f | %d in %.0f s | %.1f | %.1f | %s | %.2f | %s |\n",
			op, r.CRs, r.Seconds, r.P50Ms, r.P99Ms, r.WritesPerCR, r.FloorWritesPerCR, r.ReadsPerCR,
			r.IdleWrites, r.IdleSeconds, r.PeakRSSMiB, r.CPUSeconds, floor, r.RatioToFloor, seed)
	}
	b.WriteString("\n| operator | peak RSS MiB | at the end: file-mapped MiB | anonymous MiB | live heap MiB | machine's CPUs busy: operator's run | floor's writes |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, op := range order {
		if r, ok := rep.Operators[op]; ok {
			fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %.1f | %.0f %% | %.0f %% |\n",
				op, r.PeakRSSMiB, r.RSSFileMiB, r.RSSAnonMiB, r.HeapLiveMiB, r.BusyPercent, r.FloorBusyPercent)
		}
	}
	m := rep.Machine
	workers := ""
	if m.Workers > 0 {
		workers = fmt.Sprintf("; operators at --workers=%d", m.Workers)
	}
	fmt.Fprintf(&b, "\nMeasured %s at %s on %d CPUs (%s), %.1f GiB, %s; clients at %g QPS, burst %d%s.\n",
		m.Date[:10], m.Commit, m.CPUs, m.CPUModel, m.MemoryGiB, m.Go, m.KubeAPIQPS, m.KubeAPIBurst, workers)
	return b.String()
}

// write puts latest.json, latest.md and latest.png into dir.
func (rep report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	var series []Series
	for _, op := range order {
		if r, ok := rep.Operators[op]; ok {
			series = append(series, Series{Name: op, Latencies: r.latencies})
		}
	}
	png, err := LatencyChart("Create-to-done latency of each CR, all created at once", series)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"latest.json": append(js, '\n'),
		"latest.md":   []byte(rep.table()),
		"latest.png":  png,
	}
	for _, r := range rep.Operators {
		if r.heap != nil {
			files[r.HeapProfile] = r.heap
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// bench/README.md's table sits between these markers.
const (
	beginMarker = "<!-- bench:begin (make bench writes this table) -->\n"
	endMarker   = "<!-- bench:end -->"
)

// intoReadme replaces the table between the markers of the file at path.
func (rep report) intoReadme(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, err := replaceBetween(b, beginMarker, endMarker, rep.table())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, updated, 0o644)
}

// replaceBetween replaces what lies between begin and end in b with text.
func replaceBetween(b []byte, begin, end, text string) ([]byte, error) {
	i := bytes.Index(b, []byte(begin))
	j := bytes.Index(b, []byte(end))
	if i < 0 || j < i {
		return nil, fmt.Errorf("no %q ... %q markers", strings.TrimSpace(begin), end)
	}
	var out bytes.Buffer
	out.Write(b[:i+len(begin)])
	out.WriteString(text)
	out.Write(b[j:])
	return out.Bytes(), nil
}
