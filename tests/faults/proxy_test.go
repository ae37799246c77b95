package faults

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// proxy passes TCP connections from a loopback address to the API server,
// bytes as they are (TLS ends at the API server, whose certificate names
// 127.0.0.1), so that drop can cut every connection the operators hold, as
// a load balancer restarted or a network blip does: every watch ends at once.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.track(in, out)
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

func (p *proxy) track(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
}

// pipe copies one direction; when either side ends, both close.
func (p *proxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
	_ = dst.Close()
	_ = src.Close()
}

// drop closes every connection open now and returns how many there were.
func (p *proxy) drop() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns) / 2
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
	return n
}

func (p *proxy) close() { _ = p.ln.Close(); p.drop() }

// The proxy passes bytes both ways, and drop ends a connection a client
// holds open, as a watch is.
func TestProxyDropEndsOpenConnections(t *testing.T) {
	server, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = server.Close() }()
	go func() {
		for {
			c, err := server.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c) }() // echo
		}
	}()
	p, err := newProxy(server.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo through the proxy: %q, %v", buf, err)
	}
	if n := p.drop(); n != 1 {
		t.Errorf("drop cut %d connections, want the one open", n)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(buf); err == nil {
		t.Error("the connection still reads after drop")
	} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Error("the connection is still open after drop: the read timed out instead of ending")
	}
}
