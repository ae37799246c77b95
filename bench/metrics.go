package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// requests counts an operator's API requests by HTTP method, as its client
// reports them in rest_client_requests_total (client-go's metric, which
// controller-runtime serves on the metrics endpoint).
type requests map[string]int

// writes are the requests that change something.
func (r requests) writes() int {
	return r["POST"] + r["PUT"] + r["PATCH"] + r["DELETE"]
}

// reads are the rest: gets, lists and watches are all GETs.
func (r requests) reads() int { return r["GET"] }

// minus is what was sent since before.
func (r requests) minus(before requests) requests {
	out := requests{}
	for m, n := range r {
		out[m] = n - before[m]
	}
	return out
}

// scrape reads the requests an operator has sent so far.
func scrape(ctx context.Context, url string) (requests, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseRequests(resp.Body)
}

// parseRequests sums rest_client_requests_total by method from Prometheus'
// text format, whose sample lines read
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
		method := label(labels, "method")
		if method == "" {
			return nil, fmt.Errorf("sample without a method: %q", line)
		}
		out[method] += int(n)
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
