package redisconn

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

// The replacement must reach a real server (miniredis speaks the protocol)
// with credentials, and refuse what it cannot do rather than guess.
func TestNewClient(t *testing.T) {
	srv := miniredis.RunT(t)
	srv.RequireUserAuth("u", "p")
	ctx := context.Background()

	c, err := NewClient(ctx, &Config{Addr: srv.Addr(), Username: "u", Password: "p"})
	if err != nil {
		t.Fatalf("standalone with ACL credentials: %v", err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if got := srv.Exists("k"); !got {
		t.Fatal("the write did not reach the server")
	}

	for name, cfg := range map[string]*Config{
		"wrong password":     {Addr: srv.Addr(), Username: "u", Password: "x"},
		"no address":         {},
		"sentinel, no addrs": {SentinelConfig: &SentinelConfig{MasterName: "m"}},
		"sentinel TLS apart": {SentinelConfig: &SentinelConfig{MasterName: "m", SentinelAddrs: []string{srv.Addr()}}, SentinelTLS: &TLSConfig{}},
		"CA without certs":   {Addr: srv.Addr(), TLS: &TLSConfig{CACert: []byte("not PEM")}},
	} {
		if c, err := NewClient(ctx, cfg); err == nil {
			_ = c.Close()
			t.Errorf("%s: connected, want an error", name)
		}
	}
}

func TestBuildTLSConfig(t *testing.T) {
	if c, err := BuildTLSConfig(nil); c != nil || err != nil {
		t.Fatalf("nil: %v %v", c, err)
	}
	c, err := BuildTLSConfig(&TLSConfig{InsecureSkipVerify: true})
	if err != nil || !c.InsecureSkipVerify || c.RootCAs != nil {
		t.Fatalf("insecure: %+v %v", c, err)
	}
}
