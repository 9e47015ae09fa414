package conformance_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// issuer is an OpenID Connect provider of the test's own on 127.0.0.1:
// discovery and a JWKS with one RSA key generated at test time, and
// tokens signed with it. ToolHive's token validator discovers the JWKS
// from the issuer URL, as it would from a real identity provider; plain
// HTTP and a loopback address are what an MCPOIDCConfig must allow for
// that (insecureAllowHTTP, jwksAllowPrivateIP).
type issuer struct {
	URL  string
	key  *rsa.PrivateKey
	kid  string
	jwks atomic.Int32 // JWKS fetches: proof the validator used these keys
	// discovery counts the fetches of the discovery document: over TLS,
	// proof the client trusted the issuer's certificate.
	discovery atomic.Int32
}

// upstreamStandIn is the issuer URL an embedded authorization server's
// upstream is configured with: the schema wants https there (ToolHive's
// rule), the test's issuer speaks plain HTTP on loopback, so the test
// replaces the stand-in by the issuer's URL in what the runner or vmcp
// reads, as it does for a remote server's URL.
const upstreamStandIn = "https://upstream-idp.conformance.test"

func startIssuer(t *testing.T) *issuer {
	t.Helper()
	return startIssuerWith(t, nil)
}

// startIssuerWith is startIssuer serving HTTPS with cert when it is not
// nil.
func startIssuerWith(t *testing.T, cert *tls.Certificate) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &issuer{key: key, kid: "conformance-key-1"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		iss.discovery.Add(1)
		writeJSON(w, map[string]any{
			"issuer":                                iss.URL,
			"jwks_uri":                              iss.URL + "/jwks",
			"authorization_endpoint":                iss.URL + "/authorize",
			"token_endpoint":                        iss.URL + "/token",
			"response_types_supported":              []string{"code"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		iss.jwks.Add(1)
		pub := key.PublicKey
		writeJSON(w, map[string]any{"keys": []map[string]any{{
			"kty": "RSA", "use": "sig", "alg": "RS256", "kid": iss.kid,
			"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes()),
		}}})
	})
	srv := httptest.NewUnstartedServer(mux)
	if cert != nil {
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	iss.URL = srv.URL
	return iss
}

// claims are a valid token's claims for audience: this issuer, a
// subject, issued now and valid for ten minutes. Tests change one claim
// to make a token that must be refused.
func (i *issuer) claims(audience string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": i.URL, "aud": audience, "sub": "conformance-user",
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(10 * time.Minute).Unix(),
	}
}

// token signs claims as an RS256 JWT with the issuer's key.
func (i *issuer) token(t *testing.T, claims map[string]any) string {
	t.Helper()
	return signJWT(t, i.key, i.kid, claims)
}

func signJWT(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": kid})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	signed := b64(header) + "." + b64(payload)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b64(sig)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
