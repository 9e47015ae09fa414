package main

import (
	"encoding/json"
	"testing"

	"github.com/spf13/pflag"
)

// The --default-redis-* flags are checked as ToolHive's operator checks
// its TOOLHIVE_DEFAULT_REDIS_* variables: the same refusals in the same
// order, the password key's default, TLS only when enabled.
func TestDefaultRedisFlags(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		want     string // JSON of the default, or the error
		parseErr bool
	}{
		{args: nil, want: "null"},
		// Without an address the rest is ignored, but a half CA is not.
		{args: []string{"--default-redis-secret-name=s"}, want: "null"},
		{args: []string{"--default-redis-tls-ca-secret-name=ca"}, want: "--default-redis-tls-ca-secret-name and --default-redis-tls-ca-secret-key must both be set"},
		{args: []string{"--default-redis-addr=r:6379", "--default-redis-tls-ca-secret-name=ca", "--default-redis-tls-ca-secret-key=k"},
			want: "--default-redis-tls-ca-secret-name requires --default-redis-tls-enabled"},
		{args: []string{"--default-redis-tls-enabled"}, want: "--default-redis-tls-enabled requires --default-redis-addr"},
		{args: []string{"--default-redis-tls-enabled=maybe"}, parseErr: true},
		{args: []string{"--default-redis-addr=r:6379"}, want: `{"Addr":"r:6379","SecretName":"","SecretKey":"","TLS":null}`},
		{args: []string{"--default-redis-addr=r:6379", "--default-redis-secret-name=s", "--default-redis-tls-enabled=true"},
			want: `{"Addr":"r:6379","SecretName":"s","SecretKey":"redis-password","TLS":{}}`},
		{args: []string{"--default-redis-addr=r:6379", "--default-redis-secret-key=k", "--default-redis-tls-enabled",
			"--default-redis-tls-ca-secret-name=ca", "--default-redis-tls-ca-secret-key=ca.crt"},
			want: `{"Addr":"r:6379","SecretName":"","SecretKey":"k","TLS":{"caCertSecretRef":{"name":"ca","key":"ca.crt"}}}`},
	} {
		var f redisFlags
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		f.register(fs)
		if err := fs.Parse(tc.args); (err != nil) != tc.parseErr {
			t.Fatalf("%v: parse error %v", tc.args, err)
		} else if err != nil {
			continue
		}
		d, err := f.defaultRedis()
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			b, _ := json.Marshal(d)
			got = string(b)
		}
		if got != tc.want {
			t.Errorf("%v: got %s\nwant %s", tc.args, got, tc.want)
		}
	}
}
