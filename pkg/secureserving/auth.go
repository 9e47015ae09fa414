// Package secureserving serves an HTTP endpoint the way kube-controller-
// manager serves its secure port: over TLS, with every request's bearer
// token authenticated by the API server (TokenReview) and the request
// authorized by it (SubjectAccessReview on the non-resource URL), so that
// who may scrape /metrics is decided by RBAC, like everything else.
//
// It is written against client-go's authentication and authorization
// clients instead of k8s.io/apiserver's delegating authenticator and
// authorizer: those would pull an API server's dependency graph (etcd
// client, OpenTelemetry, gRPC, its own CEL environment) into a controller
// for what is two API calls and a small cache.
package secureserving

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Decisions are cached this long, as kube-apiserver's delegating
// authenticator and authorizer cache theirs by default: a scrape every few
// seconds costs at most one TokenReview and one SubjectAccessReview per
// scraper per period, and a revoked grant stops working within it. A
// refusal (401, 403) is cached as long, so that a client retrying a bad
// token is answered from the cache.
const cacheTTL = 10 * time.Second

// maxAllowed bounds the cache of granted decisions; past it, a grant is
// simply not cached until entries expire. maxDenied bounds the cache of
// refusals, which random tokens fill: past it the oldest refusal makes
// room, so refusals never crowd out the grants of the real scrapers.
const (
	maxAllowed = 1024
	maxDenied  = 4096
)

// reviewsPerSecond and reviewBurst bound the reviews sent to the API
// server (a token bucket; one review is a TokenReview and, for a known
// token, a SubjectAccessReview): a request that would need one past the
// limit is answered 429 without asking. Cached decisions are not counted,
// so a scraper whose grant is cached keeps being served during a flood.
const (
	reviewsPerSecond = 5
	reviewBurst      = 10
)

// reviewTimeout bounds the two reviews of one request.
const reviewTimeout = 10 * time.Second

// Authorizer authenticates and authorizes requests through the API server.
type Authorizer struct {
	kube  kubernetes.Interface
	clock clock.PassiveClock
	paths []string

	limiter *rate.Limiter
	flight  singleflight.Group

	mu      sync.Mutex
	allowed map[cacheKey]cached
	denied  map[cacheKey]cached
	// deniedOrder is the order refusals were cached in, oldest first,
	// for evicting the oldest when denied is full.
	deniedOrder []cacheKey
}

type cacheKey struct {
	token      [sha256.Size]byte
	verb, path string
}

type cached struct {
	code    int
	message string
	expires time.Time
}

// NewAuthorizer returns an Authorizer that sends its reviews with kube,
// for requests to paths: a path ending in "/" stands for every path under
// it. A request to any other path is 404 before its token is looked at.
// The caller's identity needs create on tokenreviews and
// subjectaccessreviews (the system:auth-delegator ClusterRole).
func NewAuthorizer(kube kubernetes.Interface, paths ...string) *Authorizer {
	return &Authorizer{
		kube: kube, clock: clock.RealClock{}, paths: paths,
		limiter: rate.NewLimiter(reviewsPerSecond, reviewBurst),
		allowed: map[cacheKey]cached{}, denied: map[cacheKey]cached{},
	}
}

// protected reports whether path is one the Authorizer serves.
func (a *Authorizer) protected(path string) bool {
	for _, p := range a.paths {
		if path == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(path, p)) {
			return true
		}
	}
	return false
}

// Wrap serves next only to requests that carry a bearer token the API
// server authenticates and whose user may do the request's verb on its
// path: 404 for a path the Authorizer does not serve (no review is made),
// 401 without a valid token, 403 without the permission, 429 when the
// reviews are over their rate limit, 500 when the API server cannot be
// asked.
func (a *Authorizer) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.protected(r.URL.Path) {
			http.NotFound(w, r)
			return
		}
		token, ok := bearerToken(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hivekeeper"`)
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		// Non-resource URLs are authorized with the lower-cased HTTP
		// method as the verb, as kube-apiserver does.
		key := cacheKey{token: sha256.Sum256([]byte(token)), verb: strings.ToLower(r.Method), path: r.URL.Path}
		d, ok, granted := a.lookup(key)
		if !ok {
			d = a.decide(r.Context(), token, key, granted)
		}
		if d.code != http.StatusOK {
			switch d.code {
			case http.StatusUnauthorized:
				w.Header().Set("WWW-Authenticate", `Bearer realm="hivekeeper"`)
			case http.StatusTooManyRequests:
				w.Header().Set("Retry-After", "1")
			}
			http.Error(w, d.message, d.code)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// decide reviews a request no cached decision covers, within the rate
// limit. A request whose grant just expired (a scraper's next scrape) is
// reviewed again outside the limit, so that a flood of other tokens does
// not lock the scrapers out; there are at most maxAllowed of them, each
// reviewed at most once per cacheTTL. Concurrent requests of one token,
// verb and path share a review.
func (a *Authorizer) decide(ctx context.Context, token string, key cacheKey, granted bool) cached {
	flightKey := string(key.token[:]) + "\x00" + key.verb + "\x00" + key.path
	v, _, _ := a.flight.Do(flightKey, func() (any, error) {
		if !granted && !a.limiter.AllowN(a.clock.Now(), 1) {
			return cached{code: http.StatusTooManyRequests, message: "Too Many Requests: retry later"}, nil
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reviewTimeout)
		defer cancel()
		d := a.review(ctx, token, key)
		a.store(key, d)
		return d, nil
	})
	return v.(cached)
}

func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "bearer") && token != ""
}

// review asks the API server who the token is, then whether that user may
// make the request.
func (a *Authorizer) review(ctx context.Context, token string, key cacheKey) cached {
	logger := klog.FromContext(ctx)
	tr, err := a.kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		logger.Error(err, "TokenReview failed", "path", key.path)
		return cached{code: http.StatusInternalServerError, message: "Internal Server Error: cannot review the token"}
	}
	if !tr.Status.Authenticated {
		return cached{code: http.StatusUnauthorized, message: "Unauthorized"}
	}
	user := tr.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: key.path, Verb: key.verb},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		logger.Error(err, "SubjectAccessReview failed", "user", user.Username, "path", key.path)
		return cached{code: http.StatusInternalServerError, message: "Internal Server Error: cannot authorize the request"}
	}
	if !sar.Status.Allowed {
		logger.V(2).Info("Forbidden", "user", user.Username, "verb", key.verb, "path", key.path, "reason", sar.Status.Reason)
		return cached{code: http.StatusForbidden, message: "Forbidden: user " + user.Username + " may not " + key.verb + " " + key.path}
	}
	return cached{code: http.StatusOK}
}

// lookup returns the cached decision of key, if one is current, and
// whether key was granted before (a grant, expired or not, is cached).
func (a *Authorizer) lookup(key cacheKey) (_ cached, ok, granted bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock.Now()
	d, granted := a.allowed[key]
	if granted && now.Before(d.expires) {
		return d, true, true
	}
	if d, ok := a.denied[key]; ok && now.Before(d.expires) {
		return d, true, granted
	}
	return cached{}, false, granted
}

// store caches a granted or refused decision; an API error is not cached.
func (a *Authorizer) store(key cacheKey, d cached) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock.Now()
	d.expires = now.Add(cacheTTL)
	switch d.code {
	case http.StatusOK:
		if len(a.allowed) >= maxAllowed {
			for k, v := range a.allowed {
				if !now.Before(v.expires) {
					delete(a.allowed, k)
				}
			}
			if len(a.allowed) >= maxAllowed {
				return
			}
		}
		a.allowed[key] = d
	case http.StatusUnauthorized, http.StatusForbidden:
		// A revoked grant no longer passes the limit.
		delete(a.allowed, key)
		if _, ok := a.denied[key]; !ok {
			for len(a.denied) >= maxDenied {
				delete(a.denied, a.deniedOrder[0])
				a.deniedOrder = a.deniedOrder[1:]
			}
			a.deniedOrder = append(a.deniedOrder, key)
		}
		a.denied[key] = d
	}
}
