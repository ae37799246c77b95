package membership

import "testing"

func TestOrdinal(t *testing.T) {
	tests := []struct {
		cluster, name string
		want          int
		ok            bool
	}{
		{"ex", "ex-0", 0, true},
		{"ex", "ex-12", 12, true},
		{"my-etcd", "my-etcd-3", 3, true},
		{"ex", "ex-", 0, false},
		{"ex", "ex-01", 0, false},
		{"ex", "ex-+1", 0, false},
		{"ex", "ex--1", 0, false},
		{"ex", "ex-1a", 0, false},
		{"ex", "ex-9999999999", 0, false},
		{"ex", "other-1", 0, false},
		{"ex", "7", 0, false},
		{"ex", "", 0, false},
		{"my", "my-etcd-3", 0, false},
	}
	for _, tt := range tests {
		got, ok := Ordinal(tt.cluster, tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Ordinal(%q, %q) = %d, %v; want %d, %v", tt.cluster, tt.name, got, ok, tt.want, tt.ok)
		}
		if ok && MemberName(tt.cluster, got) != tt.name {
			t.Errorf("MemberName(%q, %d) = %q, want %q", tt.cluster, got, MemberName(tt.cluster, got), tt.name)
		}
	}
}

func TestHeadlessService(t *testing.T) {
	h := HeadlessService{Service: "example", Namespace: "default"}
	if got, want := h.PeerURL("example-2"), "http://example-2.example.default.svc:2380"; got != want {
		t.Errorf("PeerURL = %q, want %q", got, want)
	}
	tls := HeadlessService{Service: "example", Namespace: "prod", Port: 12380, Scheme: "https"}
	if got, want := tls.PeerURL("example-0"), "https://example-0.example.prod.svc:12380"; got != want {
		t.Errorf("PeerURL = %q, want %q", got, want)
	}
	if got, want := h.ClientURL("example-2"), "http://example-2.example.default.svc:2379"; got != want {
		t.Errorf("ClientURL = %q, want %q", got, want)
	}
	if got, want := (HeadlessService{Service: "e", Namespace: "n", ClientPort: 12379}).ClientURL("e-0"), "http://e-0.e.n.svc:12379"; got != want {
		t.Errorf("ClientURL = %q, want %q", got, want)
	}
	tests := []struct {
		h       HeadlessService
		peerURL string
		want    string
	}{
		{h, "http://example-2.example.default.svc:2380", "example-2"},
		{tls, "https://example-0.example.prod.svc:12380", "example-0"},
		{h, "https://example-2.example.default.svc:2380", ""},
		{h, "http://example-2.example.default.svc:2381", ""},
		{h, "http://example-2.example.other.svc:2380", ""},
		{h, "http://a.b.example.default.svc:2380", ""},
		{h, "http://10.0.0.7:2380", ""},
		{h, "http://example-2:2380", ""},
		{h, "::not a url", ""},
	}
	for _, tt := range tests {
		if got := tt.h.Name(tt.peerURL); got != tt.want {
			t.Errorf("%+v.Name(%q) = %q, want %q", tt.h, tt.peerURL, got, tt.want)
		}
	}
}

func TestOptionsFor(t *testing.T) {
	tests := []struct {
		version              string
		learners, moveLeader bool
		wantErr              bool
	}{
		{"3.2.13", false, false, false},
		{"v3.3.0", false, true, false},
		{"3.4.0", true, true, false},
		{"3.6.0-rc.1", true, true, false},
		{"4.0.0", true, true, false},
		{"latest", false, false, true},
		{"3.x.1", false, false, true},
	}
	for _, tt := range tests {
		o, err := OptionsFor("ex", tt.version)
		if (err != nil) != tt.wantErr || o.Learners != tt.learners || o.MoveLeader != tt.moveLeader {
			t.Errorf("OptionsFor(%q) = %+v, %v; want learners %v, move leader %v, error %v",
				tt.version, o, err, tt.learners, tt.moveLeader, tt.wantErr)
		}
		if err == nil && o.Cluster != "ex" {
			t.Errorf("OptionsFor(%q).Cluster = %q", tt.version, o.Cluster)
		}
	}
}

// During an upgrade the members that still run an older release decide:
// etcd 3.2 has no MoveLeader (3.3's changelog adds it) and a cluster whose
// members include 3.3 ones takes no learner (3.4's adds them).
func TestOptionsForAnUpgradeInProgress(t *testing.T) {
	tests := []struct {
		version              string
		running              []string
		learners, moveLeader bool
		wantErr              bool
	}{
		{"3.3.27", []string{"3.3.27", "3.2.13", "3.3.27"}, false, false, false},
		{"3.4.0", []string{"3.3.27", "3.4.0"}, false, true, false},
		{"3.5.21", []string{"3.5.21", "3.5.0"}, true, true, false},
		{"3.2.13", []string{"3.3.27"}, false, false, false}, // an upgrade taken back
		{"3.4.0", []string{"2.9.0"}, false, false, false},   // an older major, a higher minor
		{"4.0.0", []string{"3.9.0"}, true, true, false},
		{"3.4.0", []string{"3.4.0", "latest"}, false, false, true},
		{"3.4.0", nil, true, true, false},
	}
	for _, tt := range tests {
		o, err := OptionsFor("ex", tt.version, tt.running...)
		if (err != nil) != tt.wantErr || o.Learners != tt.learners || o.MoveLeader != tt.moveLeader {
			t.Errorf("OptionsFor(%q, %q) = %+v, %v; want learners %v, move leader %v, error %v",
				tt.version, tt.running, o, err, tt.learners, tt.moveLeader, tt.wantErr)
		}
	}
}
