package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// requests counts an operator's API requests by HTTP method and the
// status code they were answered with ("GET 404", "PATCH 409"), as its
// client reports them in rest_client_requests_total (client-go's metric,
// which controller-runtime serves on the metrics endpoint).
type requests map[string]int

// methods sums r by HTTP method.
func (r requests) methods() requests {
	out := requests{}
	for k, n := range r {
		method, _, _ := strings.Cut(k, " ")
		out[method] += n
	}
	return out
}

// writes are the requests that change something, whatever the answer.
func (r requests) writes() int {
	m := r.methods()
	return m["POST"] + m["PUT"] + m["PATCH"] + m["DELETE"]
}

// reads are the rest: gets, lists and watches are all GETs.
func (r requests) reads() int { return r.methods()["GET"] }

// minus is what was sent since before.
func (r requests) minus(before requests) requests {
	out := requests{}
	for m, n := range r {
		if d := n - before[m]; d != 0 {
			out[m] = d
		}
	}
	return out
}

// scrape reads the requests an operator has sent so far.
func scrape(ctx context.Context, url string) (requests, error) {
	body, err := get(ctx, url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = body.Close() }()
	return parseRequests(body)
}

// get is the body of a GET of url that answered 200.
func get(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}

// parseRequests sums rest_client_requests_total by method and code from
// Prometheus' text format, whose sample lines read
//
//	rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 42
func parseRequests(r io.Reader) (requests, error) {
	const metric = "rest_client_requests_total{"
	out := requests{}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, metric) {
			continue
		}
		labels, value, ok := strings.Cut(line[len(metric):], "} ")
		if !ok {
			return nil, fmt.Errorf("unreadable sample %q", line)
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("unreadable sample %q: %w", line, err)
		}
		method, code := label(labels, "method"), label(labels, "code")
		if method == "" || code == "" {
			return nil, fmt.Errorf("sample without a method or a code: %q", line)
		}
		out[method+" "+code] += int(n)
	}
	return out, s.Err()
}

// label returns the value of label name in a sample's label list.
func label(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// memoryUse is a process's resident memory, in KiB: now and at its peak
// (VmRSS and VmHWM), and of now, the pages mapped from files (RssFile: its
// executable's, mostly, clean pages the kernel shares with its page cache)
// and the rest (RssAnon: the Go heap, stacks and the runtime's own).
type memoryUse struct{ rss, peak, file, anon int }

// memory reads process pid's memoryUse.
func memory(pid int) (memoryUse, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memoryUse{}, err
	}
	defer func() { _ = f.Close() }()
	return parseMemory(f)
}

func parseMemory(r io.Reader) (memoryUse, error) {
	var m memoryUse
	fields := map[string]*int{"VmRSS": &m.rss, "VmHWM": &m.peak, "RssFile": &m.file, "RssAnon": &m.anon}
	s := bufio.NewScanner(r)
	for s.Scan() {
		key, value, ok := strings.Cut(s.Text(), ":")
		field, wanted := fields[key]
		if !ok || !wanted {
			continue
		}
		kib, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(value), " kB"))
		if err != nil {
			return memoryUse{}, fmt.Errorf("%s: %w", key, err)
		}
		*field = kib
	}
	if err := s.Err(); err != nil {
		return memoryUse{}, err
	}
	if m.rss == 0 || m.peak == 0 || m.file == 0 || m.anon == 0 {
		return memoryUse{}, fmt.Errorf("no VmRSS, VmHWM, RssFile or RssAnon in /proc/PID/status")
	}
	return m, nil
}

// heapLive is the Go heap an operator held after its last garbage
// collection, in bytes, as its metrics endpoint reports it
// (go_gc_heap_live_bytes, from runtime/metrics).
func heapLive(ctx context.Context, url string) (float64, error) {
	body, err := get(ctx, url)
	if err != nil {
		return 0, err
	}
	defer func() { _ = body.Close() }()
	return gauge(body, "go_gc_heap_live_bytes")
}

// gauge is the value of the unlabelled sample name in Prometheus' text
// format.
func gauge(r io.Reader, name string) (float64, error) {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		if value, ok := strings.CutPrefix(s.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(value), 64)
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s sample", name)
}

// machineCPU reads the machine's CPU time so far, in ticks: busy (running
// a process or the kernel's interrupts) and in all (busy, idle or waiting
// on I/O; time a hypervisor stole is neither), from /proc/stat's first
// line.
func machineCPU() (busy, total float64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseMachineCPU(string(b))
}

func parseMachineCPU(stat string) (busy, total float64, err error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	// cpu user nice system idle iowait irq softirq steal guest
	// guest_nice: guest time is counted in user already.
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("unreadable /proc/stat line %q", line)
	}
	for i, v := range f[1:8] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("unreadable /proc/stat line %q: %w", line, err)
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total, nil
}

// busyMeter measures the share of the machine's CPU time spent busy, by
// every process, between its start and its percent.
type busyMeter struct{ busy, total float64 }

func startBusy() (busyMeter, error) {
	busy, total, err := machineCPU()
	return busyMeter{busy, total}, err
}

// percent is the busy share since the meter started, rounded to a percent.
func (m busyMeter) percent() (float64, error) {
	busy, total, err := machineCPU()
	if err != nil {
		return 0, err
	}
	if total <= m.total {
		return 0, fmt.Errorf("no CPU time passed")
	}
	return math.Round(100 * (busy - m.busy) / (total - m.total)), nil
}

// heapTop reads the operator's heap profile from its pprof base URL and
// returns what `go tool pprof -top` says of the memory in use: where the
// heap goes, the part of the resident memory a change can move.
func heapTop(ctx context.Context, pprof string) ([]byte, error) {
	body, err := get(ctx, pprof+"/heap")
	if err != nil {
		return nil, err
	}
	defer func() { _ = body.Close() }()
	dir, err := os.MkdirTemp("", "bench-heap")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	profile := filepath.Join(dir, "heap.pb.gz")
	f, err := os.Create(profile)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-sample_index=inuse_space", "-nodecount=30", profile).Output()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof: %w", err)
	}
	// The header names the temporary file and the time: neither means
	// anything once the file is gone.
	var keep []string
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "File: ") && !strings.HasPrefix(line, "Time: ") {
			keep = append(keep, line)
		}
	}
	return []byte(strings.Join(keep, "\n")), nil
}

// cpuSeconds is the CPU time a process has used, user and system, from
// /proc/PID/stat (its 14th and 15th fields, in the kernel's USER_HZ, 100
// ticks a second on Linux).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseCPU(string(b))
}

func parseCPU(stat string) (float64, error) {
	// The command name, the second field, is in parentheses and may hold
	// spaces: the fields that follow start after its last ')'.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("unreadable /proc/PID/stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("unreadable /proc/PID/stat %q", stat)
	}
	// f[0] is field 3 (the state): utime and stime, fields 14 and 15.
	var ticks float64
	for _, v := range f[11:13] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("unreadable /proc/PID/stat %q: %w", stat, err)
		}
		ticks += n
	}
	return round(ticks/100, 1), nil
}
