package secureserving

import (
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	a := NewAuthorizer(kube)
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
		{"/debug", "Bearer good", http.StatusForbidden},
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
