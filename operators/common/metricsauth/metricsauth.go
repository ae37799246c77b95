// Package metricsauth guards an operator's metrics with the API server's
// own checks, as kubebuilder's projects ship them: a request is served only
// when the API server accepts its bearer token (a TokenReview) and lets the
// token's user get the path (a SubjectAccessReview for the non-resource
// URL, such as /metrics).
//
// controller-runtime's filters.WithAuthenticationAndAuthorization does the
// same through k8s.io/apiserver, whose packages made every operator's binary
// and its memory at start markedly larger before it reconciled anything.
// This package asks the two reviews with client-go's typed clients, which
// the operators link already.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// AllowedFor is how long a token the API server let in is let in again
// without asking: a scraper every 15 s costs two reviews a minute, and a
// revoked token or a withdrawn right is refused within a minute.
const AllowedFor = time.Minute

// reviewTimeout bounds each review, so that a slow API server does not
// hold the scraper's connection forever.
const reviewTimeout = 10 * time.Second

// Provider is a metricsserver.Options FilterProvider: the filter it returns
// asks the API server of c, through httpClient, about each request.
func Provider(c *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	g, err := newGuard(c, httpClient)
	if err != nil {
		return nil, err
	}
	return g.filter, nil
}

func newGuard(c *rest.Config, httpClient *http.Client) (*guard, error) {
	authn, err := authnclient.NewForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authzclient.NewForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, err
	}
	return &guard{tokens: authn.TokenReviews(), access: authz.SubjectAccessReviews(), now: time.Now}, nil
}

// guard checks requests and remembers, for AllowedFor, the ones let in.
type guard struct {
	tokens authnclient.TokenReviewInterface
	access authzclient.SubjectAccessReviewInterface
	now    func() time.Time

	mu      sync.Mutex
	allowed map[request]time.Time // until when
}

// request is what a decision is about: a token (by its hash, so that no
// token stays in memory) asking verb on path.
type request struct {
	token      [sha256.Size]byte
	verb, path string
}

func (g *guard) filter(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, msg, err := g.check(r)
		if err != nil {
			log.Error(err, "the API server could not check a metrics request", "path", r.URL.Path)
			http.Error(w, "the API server could not check the request", http.StatusInternalServerError)
			return
		}
		if code != http.StatusOK {
			http.Error(w, msg, code)
			return
		}
		next.ServeHTTP(w, r)
	}), nil
}

// check answers the HTTP status r deserves, with a message for a refusal;
// an error when a review could not be asked.
func (g *guard) check(r *http.Request) (int, string, error) {
	token, ok := bearer(r)
	if !ok {
		return http.StatusUnauthorized, "Unauthorized: send a bearer token", nil
	}
	req := request{token: sha256.Sum256([]byte(token)), verb: strings.ToLower(r.Method), path: r.URL.Path}
	if g.known(req) {
		return http.StatusOK, "", nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
	defer cancel()
	review, err := g.tokens.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return 0, "", fmt.Errorf("token review: %w", err)
	}
	if !review.Status.Authenticated {
		return http.StatusUnauthorized, "Unauthorized: the API server does not accept the token", nil
	}
	user := review.Status.User
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	sar, err := g.access.Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Verb: req.verb, Path: req.path},
	}}, metav1.CreateOptions{})
	if err != nil {
		return 0, "", fmt.Errorf("subject access review: %w", err)
	}
	if !sar.Status.Allowed {
		return http.StatusForbidden, fmt.Sprintf("Forbidden: %s may not %s %s", user.Username, req.verb, req.path), nil
	}
	g.remember(req)
	return http.StatusOK, "", nil
}

// bearer is r's bearer token.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// known reports whether req was let in less than AllowedFor ago.
func (g *guard) known(req request) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now().Before(g.allowed[req])
}

// remember lets req in for AllowedFor, and forgets what expired: the
// memory holds the tokens of the last minute, not of every scraper ever.
func (g *guard) remember(req request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	for r, until := range g.allowed {
		if !now.Before(until) {
			delete(g.allowed, r)
		}
	}
	if g.allowed == nil {
		g.allowed = map[request]time.Time{}
	}
	g.allowed[req] = now.Add(AllowedFor)
}
