package portforward

import "testing"

func TestPodOf(t *testing.T) {
	tests := []struct {
		addr, ns, pod, port string
		ok                  bool
	}{
		{"example-0.example.etc.svc:2379", "etc", "example-0", "2379", true},
		{"example-0.example.etc.svc.cluster.local:2380", "etc", "example-0", "2380", true},
		{"example-client.etc.svc:2379", "", "", "", false}, // a Service, not a pod
		{"10.0.0.7:2379", "", "", "", false},
		{"example-0.example.etc.svc", "", "", "", false}, // no port
	}
	for _, tt := range tests {
		ns, pod, port, err := PodOf(tt.addr)
		if (err == nil) != tt.ok || ns != tt.ns || pod != tt.pod || port != tt.port {
			t.Errorf("PodOf(%q) = %q, %q, %q, %v", tt.addr, ns, pod, port, err)
		}
	}
}
