package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
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

// memory reads a process's resident memory now and at its peak (VmRSS and
// VmHWM), in KiB.
func memory(pid int) (rss, peak int, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }()
	return parseMemory(f)
}

func parseMemory(r io.Reader) (rss, peak int, err error) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		key, value, ok := strings.Cut(s.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kib, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(value), " kB"))
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", key, err)
		}
		if key == "VmRSS" {
			rss = kib
		} else {
			peak = kib
		}
	}
	if err := s.Err(); err != nil {
		return 0, 0, err
	}
	if rss == 0 || peak == 0 {
		return 0, 0, fmt.Errorf("no VmRSS or VmHWM in /proc/PID/status")
	}
	return rss, peak, nil
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
