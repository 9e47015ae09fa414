package secureserving

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	certutil "k8s.io/client-go/util/cert"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeReviews answers TokenReviews from tokens (token -> user) and
// SubjectAccessReviews from allowed (user -> path), counting them.
func fakeReviews(tokens map[string]string, allowed map[string]string) (*k8sfake.Clientset, *int) {
	kube := k8sfake.NewClientset()
	reviews := 0
	kube.PrependReactor("create", "tokenreviews", func(a core.Action) (bool, runtime.Object, error) {
		reviews++
		tr := a.(core.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if tr.Spec.Token == "broken" {
			return true, nil, errors.New("API server unavailable")
		}
		if user, ok := tokens[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
				Username: user, Groups: []string{"system:authenticated"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}},
			}}
		}
		return true, tr, nil
	})
	kube.PrependReactor("create", "subjectaccessreviews", func(a core.Action) (bool, runtime.Object, error) {
		reviews++
		sar := a.(core.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		na := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = na != nil && na.Verb == "get" && allowed[sar.Spec.User] == na.Path &&
			len(sar.Spec.Groups) == 1 && len(sar.Spec.Extra["k"]) == 1
		return true, sar, nil
	})
	return kube, &reviews
}

func TestDelegatedAuthorization(t *testing.T) {
	kube, reviews := fakeReviews(map[string]string{"good": "prometheus", "weak": "nobody"}, map[string]string{"prometheus": "/metrics"})
	a := NewAuthorizer(kube, "/metrics", "/debug/pprof/")
	clock := clocktesting.NewFakePassiveClock(time.Now())
	a.clock = clock
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	get := func(path, auth string) int {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("401 without WWW-Authenticate")
		}
		return w.Code
	}
	for _, tc := range []struct {
		path, auth string
		want       int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "Basic Zm9vOmJhcg==", http.StatusUnauthorized},
		{"/metrics", "Bearer ", http.StatusUnauthorized},
		{"/metrics", "Bearer unknown", http.StatusUnauthorized},
		{"/metrics", "Bearer weak", http.StatusForbidden},
		{"/metrics", "Bearer good", http.StatusOK},
		{"/metrics", "bearer good", http.StatusOK},
		{"/debug/pprof/heap", "Bearer good", http.StatusForbidden},
		{"/debug/pprof/", "", http.StatusUnauthorized},
		// Paths it does not serve are 404, token or not.
		{"/debug", "Bearer good", http.StatusNotFound},
		{"/debug/pprof", "Bearer good", http.StatusNotFound},
		{"/metrics/x", "Bearer good", http.StatusNotFound},
		{"/", "", http.StatusNotFound},
		{"/metrics", "Bearer broken", http.StatusInternalServerError},
	} {
		if got := get(tc.path, tc.auth); got != tc.want {
			t.Errorf("GET %s with %q: %d, want %d", tc.path, tc.auth, got, tc.want)
		}
	}

	// Decisions are cached for a while; API errors are not.
	before := *reviews
	for range 3 {
		get("/metrics", "Bearer good")
		get("/metrics", "Bearer weak")
	}
	if *reviews != before {
		t.Errorf("cached decisions sent %d more reviews", *reviews-before)
	}
	get("/metrics", "Bearer broken")
	if *reviews != before+1 {
		t.Errorf("an API error was cached")
	}
	clock.SetTime(clock.Now().Add(cacheTTL))
	get("/metrics", "Bearer good")
	if *reviews != before+3 {
		t.Errorf("an expired decision was not reviewed again: %d reviews", *reviews-before)
	}
	get("/metrics", "Bearer weak")
	if *reviews != before+5 {
		t.Errorf("an expired refusal was not reviewed again: %d reviews", *reviews-before)
	}
}

// TestReviewFlood sends thousands of requests with random tokens and
// counts the reviews they cost: no more than the rate limit allows, none
// for a path that is not served, and a scraper whose grant is cached is
// served all along.
func TestReviewFlood(t *testing.T) {
	kube, reviews := fakeReviews(map[string]string{"good": "prometheus"}, map[string]string{"prometheus": "/metrics"})
	a := NewAuthorizer(kube, "/metrics")
	clock := clocktesting.NewFakePassiveClock(time.Now())
	a.clock = clock
	served := 0
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++ }))
	get := func(path, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := get("/metrics", "good"); w.Code != http.StatusOK {
		t.Fatalf("the scraper's first request: %d", w.Code)
	}
	*reviews = 0

	random := func() string {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}
	codes := map[int]int{}
	for i := range 5000 {
		codes[get("/metrics", random()).Code]++
		if i%500 == 0 {
			if w := get("/metrics", "good"); w.Code != http.StatusOK {
				t.Fatalf("the scraper during the flood: %d", w.Code)
			}
		}
		if w := get("/other/"+random(), random()); w.Code != http.StatusNotFound {
			t.Fatalf("an unserved path: %d", w.Code)
		}
	}
	// The burst, less the scraper's first review. An unknown token costs
	// one TokenReview and no SubjectAccessReview.
	if *reviews != reviewBurst-1 {
		t.Errorf("5000 random tokens in one instant cost %d reviews, want %d", *reviews, reviewBurst-1)
	}
	if codes[http.StatusUnauthorized] != reviewBurst-1 || codes[http.StatusTooManyRequests] != 5000-reviewBurst+1 {
		t.Errorf("answers %v", codes)
	}
	if w := get("/metrics", random()); w.Header().Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}
	// The bucket refills at its rate.
	*reviews = 0
	clock.SetTime(clock.Now().Add(time.Second))
	for range 1000 {
		get("/metrics", random())
	}
	if *reviews != reviewsPerSecond {
		t.Errorf("a second later, 1000 random tokens cost %d reviews, want %d", *reviews, reviewsPerSecond)
	}
	if served != 1+5000/500 {
		t.Errorf("served %d requests", served)
	}

	// The scraper's grant expires in the middle of a flood: its next
	// scrape is reviewed again even though the flood drained the bucket.
	clock.SetTime(clock.Now().Add(cacheTTL))
	for range 1000 {
		get("/metrics", random())
	}
	*reviews = 0
	if w := get("/metrics", "good"); w.Code != http.StatusOK || *reviews != 2 {
		t.Errorf("the scraper after its grant expired, in a flood: %d, %d reviews", w.Code, *reviews)
	}
	// Once refused, it waits its turn like any other token.
	kube.PrependReactor("create", "subjectaccessreviews", func(a core.Action) (bool, runtime.Object, error) {
		sar := a.(core.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		return true, sar, nil
	})
	clock.SetTime(clock.Now().Add(cacheTTL))
	for range 1000 {
		get("/metrics", random())
	}
	*reviews = 0
	if w := get("/metrics", "good"); w.Code != http.StatusForbidden {
		t.Errorf("the revoked scraper: %d", w.Code)
	}
	clock.SetTime(clock.Now().Add(cacheTTL))
	for range 1000 {
		get("/metrics", random())
	}
	*reviews = 0
	if w := get("/metrics", "good"); w.Code != http.StatusTooManyRequests || *reviews != 0 {
		t.Errorf("the revoked scraper in a flood: %d, %d reviews", w.Code, *reviews)
	}
}

// TestRefusalCache bounds the refusals cached and keeps them from
// crowding out grants.
func TestRefusalCache(t *testing.T) {
	kube, reviews := fakeReviews(map[string]string{"good": "prometheus", "weak": "nobody"}, map[string]string{"prometheus": "/metrics"})
	a := NewAuthorizer(kube, "/metrics")
	clock := clocktesting.NewFakePassiveClock(time.Now())
	a.clock = clock
	a.limiter = rate.NewLimiter(rate.Inf, 0)
	h := a.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	get := func(token string) int {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	get("weak")
	for i := range maxDenied + 100 {
		if code := get("bad-" + strconv.Itoa(i)); code != http.StatusUnauthorized {
			t.Fatalf("bad token: %d", code)
		}
	}
	if len(a.denied) != maxDenied || len(a.deniedOrder) != maxDenied {
		t.Errorf("%d refusals cached (%d in order), want %d", len(a.denied), len(a.deniedOrder), maxDenied)
	}
	*reviews = 0
	// The newest refusals are cached, the oldest made room.
	get("bad-" + strconv.Itoa(maxDenied+99))
	if *reviews != 0 {
		t.Errorf("the newest refusal was not cached")
	}
	get("weak")
	if *reviews != 2 {
		t.Errorf("the oldest refusal was not evicted: %d reviews", *reviews)
	}
	// Grants are cached whatever the refusals fill.
	*reviews = 0
	get("good")
	get("good")
	if *reviews != 2 {
		t.Errorf("a grant was not cached with the refusal cache full: %d reviews", *reviews)
	}
}

func TestTLSConfig(t *testing.T) {
	self, err := TLSConfig("", "hivekeeper.test")
	if err != nil {
		t.Fatal(err)
	}
	if len(self.Certificates) != 1 || self.MinVersion != tls.VersionTLS12 {
		t.Fatalf("self-signed config %+v", self)
	}

	dir := t.TempDir()
	write := func(host string) {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{CertFile: certPEM, KeyFile: keyPEM} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := TLSConfig(dir, "x"); err == nil {
		t.Fatal("want an error for a folder without the files")
	}
	write("first.test")
	cfg, err := TLSConfig(dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	leaf := func() string {
		c, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.Subject.CommonName
	}
	if cn := leaf(); cn[:5] != "first" {
		t.Errorf("served %s", cn)
	}
	// A rotated certificate is served without a restart.
	later := time.Now().Add(time.Minute)
	write("second.test")
	for _, f := range []string{CertFile, KeyFile} {
		if err := os.Chtimes(filepath.Join(dir, f), later, later); err != nil {
			t.Fatal(err)
		}
	}
	if cn := leaf(); cn[:6] != "second" {
		t.Errorf("served %s after rotation", cn)
	}
}
