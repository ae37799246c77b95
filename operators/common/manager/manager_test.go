package manager

import (
	"flag"
	"reflect"
	"strings"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
)

func TestNamespaceFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"none: every namespace", nil, nil},
		{"one", []string{"--namespace=etc2"}, []string{"etc2"}},
		{"commas and repeats", []string{"--namespace", "a, b", "--namespace=c"}, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o Options
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o.BindFlags(fs, Operator{Name: "test"})
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(o.Namespaces, tt.want) {
				t.Errorf("namespaces %q, want %q", o.Namespaces, tt.want)
			}
		})
	}
}

func TestDefaultProbeAddress(t *testing.T) {
	for _, tt := range []struct{ given, want string }{{"", ":8081"}, {":8090", ":8090"}} {
		var o Options
		o.BindFlags(flag.NewFlagSet("test", flag.ContinueOnError), Operator{Name: "test", DefaultProbeAddr: tt.given})
		if o.ProbeAddr != tt.want {
			t.Errorf("DefaultProbeAddr %q gives %q, want %q", tt.given, o.ProbeAddr, tt.want)
		}
	}
}

// From -v=8 on, client-go would log Secrets' bodies: refused before anything
// runs, saying why.
func TestVerbosityThatWouldLogSecretsIsRefused(t *testing.T) {
	op := Operator{Name: "test", Setup: func(ctrl.Manager, Options) error {
		t.Fatal("an operator started at -v=8")
		return nil
	}}
	err := Run(op, []string{"-v=8"})
	if err == nil || !strings.Contains(err.Error(), "passwords") || !strings.Contains(err.Error(), "-v=7 at most") {
		t.Fatalf("-v=8: %v", err)
	}
}

func TestCredentialsFollowGetConfigsOrder(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod
	t.Setenv("KUBECONFIG", "")
	if got := credentials(); got != "kubeconfig ~/.kube/config" {
		t.Errorf("nothing given: %q", got)
	}
	t.Setenv("KUBECONFIG", "/tmp/env-kubeconfig")
	if got := credentials(); got != "kubeconfig /tmp/env-kubeconfig ($KUBECONFIG)" {
		t.Errorf("$KUBECONFIG: %q", got)
	}
	f := flag.CommandLine.Lookup("kubeconfig")
	if err := f.Value.Set("/tmp/flag-kubeconfig"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set("") })
	if got := credentials(); got != "kubeconfig /tmp/flag-kubeconfig (--kubeconfig)" {
		t.Errorf("--kubeconfig and $KUBECONFIG: %q", got)
	}
}

func TestMetricsSecureChecksTokens(t *testing.T) {
	if m := metricsOptions(Options{MetricsAddr: ":8080"}); m.SecureServing || m.FilterProvider != nil {
		t.Errorf("without --metrics-secure: secure %v, filter %v; want plain HTTP for a local go run", m.SecureServing, m.FilterProvider != nil)
	}
	if m := metricsOptions(Options{MetricsAddr: ":8443", MetricsSecure: true}); !m.SecureServing || m.FilterProvider == nil || m.BindAddress != ":8443" {
		t.Errorf("with --metrics-secure: secure %v, filter %v, address %q; want HTTPS with the authentication and authorization filter", m.SecureServing, m.FilterProvider != nil, m.BindAddress)
	}
}
