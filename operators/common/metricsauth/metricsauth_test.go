package metricsauth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
)

// apiServer answers the two reviews as an API server would: token
// "reader-token" is the user reader, allowed to get /metrics; token
// "other-token" is the user other, allowed nothing; any other token is not
// accepted. It counts the reviews it was asked.
func apiServer(t *testing.T) (*rest.Config, *atomic.Int32) {
	t.Helper()
	var reviews atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reviews.Add(1)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authnv1.TokenReview
			if err := json.Unmarshal(body, &tr); err != nil {
				t.Error(err)
			}
			switch tr.Spec.Token {
			case "reader-token":
				tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "reader", Groups: []string{"scrapers"}}}
			case "other-token":
				tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "other"}}
			}
			_ = json.NewEncoder(w).Encode(tr)
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authzv1.SubjectAccessReview
			if err := json.Unmarshal(body, &sar); err != nil {
				t.Error(err)
			}
			a := sar.Spec.NonResourceAttributes
			sar.Status.Allowed = sar.Spec.User == "reader" && len(sar.Spec.Groups) == 1 && a != nil && a.Verb == "get" && a.Path == "/metrics"
			_ = json.NewEncoder(w).Encode(sar)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	// JSON, which the fake API server reads (clients may send protobuf).
	return &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}, &reviews
}

func TestOnlyAnAllowedTokenReadsTheMetrics(t *testing.T) {
	cfg, reviews := apiServer(t)
	g, err := newGuard(cfg, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	g.now = func() time.Time { return now }
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "controller_runtime_reconcile_total 1\n")
	})
	h, err := g.filter(logr.Discard(), metrics)
	if err != nil {
		t.Fatal(err)
	}
	get := func(token, path string) int {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for _, tc := range []struct {
		token, path string
		want        int
		reviews     int
	}{
		{"", "/metrics", http.StatusUnauthorized, 0},
		{"forged-token", "/metrics", http.StatusUnauthorized, 1},
		{"other-token", "/metrics", http.StatusForbidden, 2},
		{"reader-token", "/debug/pprof/", http.StatusForbidden, 2},
		{"reader-token", "/metrics", http.StatusOK, 2},
		// Let in a moment ago: not asked again.
		{"reader-token", "/metrics", http.StatusOK, 0},
	} {
		before := reviews.Load()
		if got := get(tc.token, tc.path); got != tc.want {
			t.Errorf("token %q on %s: HTTP %d, want %d", tc.token, tc.path, got, tc.want)
		}
		if n := int(reviews.Load() - before); n != tc.reviews {
			t.Errorf("token %q on %s: %d reviews asked, want %d", tc.token, tc.path, n, tc.reviews)
		}
	}
	// A minute later the API server is asked again: a token revoked, or a
	// right withdrawn, stops working.
	now = now.Add(AllowedFor)
	before := reviews.Load()
	if got := get("reader-token", "/metrics"); got != http.StatusOK || reviews.Load()-before != 2 {
		t.Errorf("after %s: HTTP %d with %d reviews, want 200 with 2", AllowedFor, got, reviews.Load()-before)
	}
}
