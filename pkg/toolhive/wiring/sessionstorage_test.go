package wiring

import (
	"encoding/json"
	"testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// Session storage follows ToolHive v0.63.0's operator: the spec's Redis
// as written, TLS as {} or with the mounted CA file, and the default
// Redis where the kind falls back to it (its password only without any
// spec.sessionStorage).
func TestSessionStorage(t *testing.T) {
	ca := &thv1.SecretKeyRef{Name: "redis-ca", Key: "ca.pem"}
	def := &DefaultRedis{Addr: "redis.infra:6379", SecretName: "redis", SecretKey: "redis-password", TLS: &thv1.RedisTLSConfig{CACertSecretRef: ca}}
	redis := func(mut func(*thv1.SessionStorageConfig)) *thv1.SessionStorageConfig {
		s := &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6379", DB: 2, KeyPrefix: "p:",
			PasswordRef: &thv1.SecretKeyRef{Name: "pw", Key: "k"}}
		if mut != nil {
			mut(s)
		}
		return s
	}
	memory := &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderMemory}
	const caVolume = `[{"name":"session-redis-tls-ca","secret":{"secretName":"redis-ca","items":[{"key":"ca.pem","path":"ca.crt"}],"defaultMode":256}}]`
	const caMount = `[{"name":"session-redis-tls-ca","readOnly":true,"mountPath":"/etc/toolhive/session-redis-tls/ca.crt","subPath":"ca.crt"}]`
	for _, tc := range []struct {
		name                     string
		spec                     *thv1.SessionStorageConfig
		def                      *DefaultRedis
		fallback                 Fallback
		redis, env, vols, mounts string
	}{
		{name: "none", redis: "null", env: "null", vols: "null", mounts: "null"},
		{name: "memory", spec: memory, redis: "null", env: "null", vols: "null", mounts: "null"},
		{name: "plaintext", spec: redis(nil), redis: `{"address":"redis:6379","db":2,"key_prefix":"p:"}`,
			env: `[{"name":"THV_SESSION_REDIS_PASSWORD","valueFrom":{"secretKeyRef":{"name":"pw","key":"k"}}}]`, vols: "null", mounts: "null"},
		{name: "tls-system-roots", spec: redis(func(s *thv1.SessionStorageConfig) { s.TLS, s.PasswordRef = &thv1.RedisTLSConfig{}, nil }),
			redis: `{"address":"redis:6379","db":2,"key_prefix":"p:","tls":{}}`, env: "null", vols: "null", mounts: "null"},
		{name: "tls-insecure", spec: redis(func(s *thv1.SessionStorageConfig) {
			s.TLS, s.PasswordRef = &thv1.RedisTLSConfig{InsecureSkipVerify: true}, nil
		}),
			redis: `{"address":"redis:6379","db":2,"key_prefix":"p:","tls":{"insecureSkipVerify":true}}`, env: "null", vols: "null", mounts: "null"},
		{name: "tls-ca", spec: redis(func(s *thv1.SessionStorageConfig) {
			s.TLS, s.PasswordRef = &thv1.RedisTLSConfig{CACertSecretRef: ca}, nil
		}),
			redis: `{"address":"redis:6379","db":2,"key_prefix":"p:","tls":{"caCertFile":"/etc/toolhive/session-redis-tls/ca.crt"}}`,
			env:   "null", vols: caVolume, mounts: caMount},
		// A spec's own Redis is never merged with the default.
		{name: "spec-wins", spec: redis(nil), def: def, redis: `{"address":"redis:6379","db":2,"key_prefix":"p:"}`,
			env: `[{"name":"THV_SESSION_REDIS_PASSWORD","valueFrom":{"secretKeyRef":{"name":"pw","key":"k"}}}]`, vols: "null", mounts: "null"},
		{name: "default", def: def, redis: `{"address":"redis.infra:6379","tls":{"caCertFile":"/etc/toolhive/session-redis-tls/ca.crt"}}`,
			env:  `[{"name":"THV_SESSION_REDIS_PASSWORD","valueFrom":{"secretKeyRef":{"name":"redis","key":"redis-password"}}}]`,
			vols: caVolume, mounts: caMount},
		// Memory falls back to the default's address and TLS, not its password.
		{name: "memory-default", spec: memory, def: def, redis: `{"address":"redis.infra:6379","tls":{"caCertFile":"/etc/toolhive/session-redis-tls/ca.crt"}}`,
			env: "null", vols: caVolume, mounts: caMount},
		{name: "memory-default-remote", spec: memory, def: def, fallback: FallbackWhenAbsent, redis: "null", env: "null", vols: "null", mounts: "null"},
		{name: "default-remote", def: &DefaultRedis{Addr: "r:1"}, fallback: FallbackWhenAbsent, redis: `{"address":"r:1"}`, env: "null", vols: "null", mounts: "null"},
	} {
		w := SessionStorage(tc.spec, tc.def, tc.fallback)
		for _, c := range []struct {
			want string
			got  any
		}{{tc.redis, w.Redis}, {tc.env, w.Env}, {tc.vols, w.Volumes}, {tc.mounts, w.Mounts}} {
			if b, _ := json.Marshal(c.got); string(b) != c.want {
				t.Errorf("%s: got %s\nwant %s", tc.name, b, c.want)
			}
		}
	}
}
