package wiring

import (
	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// EnvSessionRedisPassword carries spec.sessionStorage.passwordRef into the
// proxy container from its Secret; ToolHive's runner reads the Redis
// password from it (session storage and rate limiting alike), so the
// password never enters the RunConfig ConfigMap.
const EnvSessionRedisPassword = "THV_SESSION_REDIS_PASSWORD"

// SessionRedis is the RunConfig's scaling_config.session_redis for
// spec.sessionStorage: the connection parameters of a redis provider, nil
// for memory or none. ToolHive's operator also falls back to its own
// TOOLHIVE_DEFAULT_REDIS_ADDR when the spec names no storage; hivekeeper
// has no such default.
func SessionRedis(s *thv1.SessionStorageConfig) *schema.SessionRedisConfig {
	if s == nil || s.Provider != thv1.SessionStorageProviderRedis {
		return nil
	}
	return &schema.SessionRedisConfig{Address: s.Address, DB: s.DB, KeyPrefix: s.KeyPrefix}
}

// RedisPasswordEnv is the proxy container's env for a Redis password:
// a secretKeyRef when a redis provider names passwordRef, none otherwise.
// It goes after the override env, where ToolHive's operator puts it, so a
// plain override of the same name does not replace it.
func RedisPasswordEnv(s *thv1.SessionStorageConfig) []corev1.EnvVar {
	if s == nil || s.Provider != thv1.SessionStorageProviderRedis || s.PasswordRef == nil {
		return nil
	}
	return []corev1.EnvVar{SecretEnv(EnvSessionRedisPassword, s.PasswordRef.Name, s.PasswordRef.Key)}
}
