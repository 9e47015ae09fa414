package app

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Both clientsets ask for uncompressed responses (no Accept-Encoding:
// gzip), as kube-controller-manager does, and core types as protobuf;
// the caller's config is left as it was.
func TestNewClientsAskForUncompressedResponses(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]http.Header{}
	// TLS, as every API server: client-go gives a plain-HTTP config with
	// nothing custom Go's default transport, which always asks for gzip.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = r.Header.Clone()
		mu.Unlock()
		http.Error(w, "not here", http.StatusNotFound)
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	kube, th, err := NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, _ = kube.CoreV1().ConfigMaps("ns").Get(ctx, "a", metav1.GetOptions{})
	_, _ = th.ToolhiveV1beta1().MCPServers("ns").Get(ctx, "a", metav1.GetOptions{})
	for _, path := range []string{"/api/v1/namespaces/ns/configmaps/a", "/apis/toolhive.stacklok.dev/v1beta1/namespaces/ns/mcpservers/a"} {
		h, ok := seen[path]
		if !ok {
			t.Fatalf("no request to %s; got %v", path, seen)
		}
		if enc := h.Get("Accept-Encoding"); enc != "" {
			t.Errorf("%s: Accept-Encoding %q, want none", path, enc)
		}
	}
	if got := seen["/api/v1/namespaces/ns/configmaps/a"].Get("Accept"); got != "application/vnd.kubernetes.protobuf,application/json" {
		t.Errorf("core types Accept %q, want protobuf first", got)
	}
	if cfg.DisableCompression {
		t.Error("NewClients changed the caller's config")
	}
}
