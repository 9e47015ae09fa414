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
// scraper per period, and a revoked grant stops working within it.
const cacheTTL = 10 * time.Second

// maxCached bounds the cache, so random tokens cannot grow it without end;
// past it, decisions are simply not cached until entries expire.
const maxCached = 1024

// reviewTimeout bounds the two reviews of one request.
const reviewTimeout = 10 * time.Second

// Authorizer authenticates and authorizes requests through the API server.
type Authorizer struct {
	kube  kubernetes.Interface
	clock clock.PassiveClock

	mu    sync.Mutex
	cache map[cacheKey]cached
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

// NewAuthorizer returns an Authorizer that sends its reviews with kube.
// The caller's identity needs create on tokenreviews and
// subjectaccessreviews (the system:auth-delegator ClusterRole).
func NewAuthorizer(kube kubernetes.Interface) *Authorizer {
	return &Authorizer{kube: kube, clock: clock.RealClock{}, cache: map[cacheKey]cached{}}
}

// Wrap serves next only to requests that carry a bearer token the API
// server authenticates and whose user may do the request's verb on its
// path: 401 without a valid token, 403 without the permission, 500 when
// the API server cannot be asked.
func (a *Authorizer) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hivekeeper"`)
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		// Non-resource URLs are authorized with the lower-cased HTTP
		// method as the verb, as kube-apiserver does.
		key := cacheKey{token: sha256.Sum256([]byte(token)), verb: strings.ToLower(r.Method), path: r.URL.Path}
		d, ok := a.lookup(key)
		if !ok {
			ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
			d = a.review(ctx, token, key)
			cancel()
			if d.code != http.StatusInternalServerError {
				a.store(key, d)
			}
		}
		if d.code != http.StatusOK {
			if d.code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="hivekeeper"`)
			}
			http.Error(w, d.message, d.code)
			return
		}
		next.ServeHTTP(w, r)
	})
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

func (a *Authorizer) lookup(key cacheKey) (cached, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	d, ok := a.cache[key]
	if !ok || !a.clock.Now().Before(d.expires) {
		return cached{}, false
	}
	return d, true
}

func (a *Authorizer) store(key cacheKey, d cached) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock.Now()
	if len(a.cache) >= maxCached {
		for k, v := range a.cache {
			if !now.Before(v.expires) {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= maxCached {
			return
		}
	}
	d.expires = now.Add(cacheTTL)
	a.cache[key] = d
}
