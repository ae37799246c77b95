// Package loopback hands out addresses of 127.0.0.1 to tests that run etcd
// servers, each on ports of its own.
package loopback

import (
	"net"
	"sync"
)

var (
	mu     sync.Mutex
	handed = map[string]bool{}
)

// FreeAddr is an address of 127.0.0.1 ("127.0.0.1:port") that nothing
// listens on and that this process has not handed out before, so tests that
// run in parallel never get the same port.
func FreeAddr() string {
	mu.Lock()
	defer mu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic("loopback: no free port on 127.0.0.1: " + err.Error())
		}
		a := l.Addr().String()
		_ = l.Close()
		if !handed[a] {
			handed[a] = true
			return a
		}
	}
}
