package pods

import (
	"flag"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRequestsFlags(t *testing.T) {
	tests := []struct {
		args        []string
		cpu, memory string // "" for none
		err         string
	}{
		{nil, "100m", "256Mi", ""},
		{[]string{"--server-cpu-request=1", "--server-memory-request=1Gi"}, "1", "1Gi", ""},
		{[]string{"--server-cpu-request=0"}, "", "256Mi", ""},
		{[]string{"--server-cpu-request=0", "--server-memory-request=0"}, "", "", ""},
		{[]string{"--server-memory-request=-1Gi"}, "", "", "must not be negative"},
		{[]string{"--server-cpu-request=lots"}, "", "", "is not a quantity (250m or 1)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := NewRequests("100m", "256Mi")
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			r.BindFlags(fs, "server", "server pod")
			err := fs.Parse(tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			list := r.List()
			for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: tt.cpu, corev1.ResourceMemory: tt.memory} {
				q, ok := list[name]
				if want == "" && ok || want != "" && (!ok || q.String() != want) {
					t.Errorf("%s request %v (set %v), want %q", name, q.String(), ok, want)
				}
			}
			if (tt.cpu == "" && tt.memory == "") != (list == nil && r.Apply() == nil) {
				t.Errorf("requests %v, apply %v: nil only when nothing is requested", list, r.Apply())
			}
		})
	}
}
