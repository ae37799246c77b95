// Package portforward dials TCP ports of pods through the API server, as
// `kubectl port-forward` does, without a local listener: each connection is
// one port-forward stream. An operator that runs outside the cluster (`go
// run` on a laptop) reaches its pods this way, since pod IPs and cluster DNS
// names mean nothing there.
package portforward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// protocol is the port-forward subprotocol of the API server.
const protocol = "portforward.k8s.io"

// Dialer opens connections to pods through the API server.
type Dialer struct {
	rest      rest.Interface
	transport http.RoundTripper
	upgrader  spdy.Upgrader
}

// New returns a Dialer that talks to the API server of config. Its user needs
// create on pods/portforward.
func New(config *rest.Config) (*Dialer, error) {
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	transport, upgrader, err := spdy.RoundTripperFor(config)
	if err != nil {
		return nil, err
	}
	return &Dialer{rest: cs.CoreV1().RESTClient(), transport: transport, upgrader: upgrader}, nil
}

// PodOf maps the address of a pod behind a headless Service,
// <pod>.<service>.<namespace>.svc[.<cluster domain>]:<port>, to its
// namespace, name and port.
func PodOf(addr string) (namespace, pod, port string, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", "", err
	}
	labels := strings.Split(host, ".")
	if len(labels) < 4 || labels[3] != "svc" || labels[0] == "" || labels[2] == "" {
		return "", "", "", fmt.Errorf("%s is not the address of a pod behind a headless Service (<pod>.<service>.<namespace>.svc:<port>)", addr)
	}
	return labels[2], labels[0], port, nil
}

// DialContext connects to addr, a pod's address as PodOf reads it. It has the
// signature of grpc.WithContextDialer and net.Dialer.DialContext.
func (d *Dialer) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	ns, pod, port, err := PodOf(addr)
	if err != nil {
		return nil, err
	}
	u := d.rest.Post().Namespace(ns).Resource("pods").Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialerForStreaming(d.upgrader, &http.Client{Transport: d.transport}, http.MethodPost, u)

	type dialed struct {
		conn httpstream.Connection
		err  error
	}
	ch := make(chan dialed, 1)
	go func() {
		conn, _, err := dialer.Dial(protocol)
		ch <- dialed{conn, err}
	}()
	var conn httpstream.Connection
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("port-forward to pod %s/%s: %w", ns, pod, r.err)
		}
		conn = r.conn
	case <-ctx.Done():
		go func() { // close the connection if it arrives after all
			if r := <-ch; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
	c, err := open(conn, port)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("port-forward to pod %s/%s port %s: %w", ns, pod, port, err)
	}
	return c, nil
}

// open creates the error and data streams of one forwarded connection and
// returns the data stream as a net.Conn. The kubelet reports a failure to
// reach the port on the error stream; the connection is then closed.
func open(conn httpstream.Connection, port string) (net.Conn, error) {
	headers := http.Header{}
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	headers.Set(corev1.PortHeader, port)
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(headers)
	if err != nil {
		return nil, err
	}
	// Nothing is sent on the error stream, only received.
	_ = errStream.Close()
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	if err != nil {
		return nil, err
	}

	// A pipe gives the caller a full net.Conn, deadlines included; two
	// copies join its far end to the stream.
	near, far := net.Pipe()
	closeAll := func() {
		_ = far.Close()
		_ = data.Close()
		_ = conn.Close()
	}
	go func() {
		_, _ = io.Copy(data, far)
		closeAll()
	}()
	go func() {
		_, _ = io.Copy(far, data)
		closeAll()
	}()
	go func() {
		msg, err := io.ReadAll(errStream)
		if len(msg) > 0 || (err != nil && !errors.Is(err, io.EOF)) {
			closeAll()
		}
	}()
	return near, nil
}
