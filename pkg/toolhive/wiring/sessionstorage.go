package wiring

import (
	"path"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// EnvSessionRedisPassword carries the Redis password into the proxy (or
// vmcp) container from its Secret; ToolHive's runtime reads the password
// of session storage and rate limiting from it, so the password never
// enters a ConfigMap.
const EnvSessionRedisPassword = "THV_SESSION_REDIS_PASSWORD"

// Where ToolHive's operator (v0.63.0) mounts the CA bundle that verifies
// the session storage Redis server: one Secret key as one file, readable
// by its owner only, in the container that reads the configuration.
const (
	SessionRedisCAVolume   = "session-redis-tls-ca"
	sessionRedisCAMountDir = "/etc/toolhive/session-redis-tls"
	sessionRedisCAFile     = "ca.crt"
	sessionRedisCAMode     = authServerFileMode
)

// DefaultRedis is the Redis hivekeeper gives a workload whose spec names
// none (the --default-redis-* flags, ToolHive's TOOLHIVE_DEFAULT_REDIS_*
// variables of its operator). It is read once at start and never
// changed: builds share it.
type DefaultRedis struct {
	// Addr is host:port.
	Addr string
	// SecretName and SecretKey hold the password; no password when
	// SecretName is empty.
	SecretName, SecretKey string
	// TLS, when set, connects over TLS: verified with the CA bundle of
	// CACertSecretRef, or with the system roots. InsecureSkipVerify is
	// never set from the flags.
	TLS *thv1.RedisTLSConfig
}

// sessionStorage is the default as a spec's sessionStorage: its address
// and TLS, no database, no key prefix, and no password reference (the
// password is added by whoever falls back to it).
func (d *DefaultRedis) sessionStorage() *thv1.SessionStorageConfig {
	if d == nil {
		return nil
	}
	return &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: d.Addr, TLS: d.TLS.DeepCopy()}
}

// Fallback says when a kind's workload falls back to the DefaultRedis,
// as ToolHive's operator decides it per kind.
type Fallback int

const (
	// FallbackUnlessRedis: when the spec names no storage or a provider
	// other than redis (MCPServer, VirtualMCPServer).
	FallbackUnlessRedis Fallback = iota
	// FallbackWhenAbsent: only when the spec names no storage
	// (MCPRemoteProxy).
	FallbackWhenAbsent
)

// SessionStorageWiring is what session storage adds to a workload: the
// Redis connection its configuration names (nil for in-memory
// sessions), the password variable, and the CA bundle's Secret volume.
type SessionStorageWiring struct {
	Redis   *schema.SessionRedisConfig
	Env     []corev1.EnvVar
	Volumes []corev1.Volume
	Mounts  []corev1.VolumeMount
}

// SessionStorage wires spec.sessionStorage as ToolHive's operator
// (v0.63.0) does: a redis provider is used as written (its own address,
// database, key prefix, TLS and password, never merged with the
// default); otherwise, when fallback allows it, the DefaultRedis's
// address and TLS. The default's password goes only to a workload whose
// spec names no storage at all, even where a memory provider falls back
// to the default's address.
func SessionStorage(s *thv1.SessionStorageConfig, def *DefaultRedis, fallback Fallback) SessionStorageWiring {
	var w SessionStorageWiring
	use := s
	if s == nil || s.Provider != thv1.SessionStorageProviderRedis {
		use = nil
		if s == nil || fallback == FallbackUnlessRedis {
			use = def.sessionStorage()
		}
	}
	if use == nil {
		return w
	}
	w.Redis = &schema.SessionRedisConfig{Address: use.Address, DB: use.DB, KeyPrefix: use.KeyPrefix}
	if t := use.TLS; t != nil {
		w.Redis.TLS = &schema.RedisTLSConfig{InsecureSkipVerify: t.InsecureSkipVerify}
		if r := t.CACertSecretRef; r != nil {
			w.Redis.TLS.CACertFile = path.Join(sessionRedisCAMountDir, sessionRedisCAFile)
			w.Volumes, w.Mounts = secretFileVolume(SessionRedisCAVolume, r.Name, r.Key, sessionRedisCAMountDir, sessionRedisCAFile)
		}
	}
	switch {
	case s != nil && s.PasswordRef != nil && use == s:
		w.Env = []corev1.EnvVar{SecretEnv(EnvSessionRedisPassword, s.PasswordRef.Name, s.PasswordRef.Key)}
	case s == nil && def != nil && def.SecretName != "":
		w.Env = []corev1.EnvVar{SecretEnv(EnvSessionRedisPassword, def.SecretName, def.SecretKey)}
	}
	return w
}

// secretFileVolume is one key of Secret secret as the file dir/file of
// the container, readable by its owner only and mounted by subPath, so
// other files of dir stay as they are.
func secretFileVolume(volume, secret, key, dir, file string) ([]corev1.Volume, []corev1.VolumeMount) {
	mode := sessionRedisCAMode
	return []corev1.Volume{{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, Items: []corev1.KeyToPath{{Key: key, Path: file}}, DefaultMode: &mode,
		}}}}, []corev1.VolumeMount{{
			Name: volume, MountPath: path.Join(dir, file), SubPath: file, ReadOnly: true,
		}}
}
