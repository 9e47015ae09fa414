package wiring

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// Owner is the workload an authorization server runs for: its Redis keys
// are prefixed with the workload's namespace and name, as ToolHive's
// operator prefixes them, so two workloads never share sessions.
type Owner struct{ Namespace, Name string }

// Where ToolHive's operator puts an authorization server's Redis
// credentials: the ACL user's name and password are secretKeyRef
// variables, the CA certificates of Redis and of Sentinel Secret files.
const (
	EnvAuthServerRedisUsername = "TOOLHIVE_AUTH_SERVER_REDIS_USERNAME"
	EnvAuthServerRedisPassword = "TOOLHIVE_AUTH_SERVER_REDIS_PASSWORD"
	AuthServerRedisCAMountPath = "/etc/toolhive/authserver/redis-tls"
	authServerRedisCAVolume    = "redis-tls-ca-"
	authServerRedisCAFile      = "ca.crt"
	authServerSentinelCAFile   = "sentinel-ca.crt"
	redisAuthTypeACLUser       = "aclUser"
	defaultSentinelPort        = 26379
)

// storageConfig is the storage block as ToolHive's operator writes it,
// after its checks and with its messages: nothing for memory without a
// cap on clients, and for Redis one address or Sentinel, the ACL user's
// variables, the workload's key prefix and the CA files.
func storageConfig(owner Owner, st *authServerStorage) (*schema.AuthServerStorage, error) {
	if st == nil {
		return nil, nil
	}
	var maxClients *int
	if st.MaxDCRClients != nil {
		maxClients = ptr.To(int(*st.MaxDCRClients))
	}
	switch st.Type {
	case "", storageMemory:
		// An empty type is what the schema defaults to memory.
		if maxClients == nil {
			return nil, nil
		}
		return &schema.AuthServerStorage{Type: storageMemory, MaxDCRClients: maxClients}, nil
	case storageRedis:
	default:
		return nil, fmt.Errorf("unsupported storage type: %s", st.Type)
	}
	r := st.Redis
	switch {
	case r == nil:
		return nil, fmt.Errorf("redis config is required when storage type is redis")
	case r.Addr != "" && r.SentinelConfig != nil:
		return nil, fmt.Errorf("addr and sentinelConfig are mutually exclusive for Redis storage")
	case r.Addr == "" && r.SentinelConfig == nil:
		return nil, fmt.Errorf("one of addr (standalone or cluster) or sentinelConfig (Sentinel) is required for Redis storage")
	case r.ACLUserConfig == nil || r.ACLUserConfig.PasswordSecretRef == nil:
		return nil, fmt.Errorf("ACL user config is required for Redis storage")
	}
	acl := &schema.RedisACLUser{PasswordEnvVar: EnvAuthServerRedisPassword}
	if r.ACLUserConfig.UsernameSecretRef != nil {
		acl.UsernameEnvVar = EnvAuthServerRedisUsername
	}
	rc := &schema.RedisConfig{Addr: r.Addr, ClusterMode: r.ClusterMode, AuthType: redisAuthTypeACLUser, ACLUserConfig: acl,
		KeyPrefix: fmt.Sprintf("thv:auth:{%s:%s}:", owner.Namespace, owner.Name), DialTimeout: r.DialTimeout,
		ReadTimeout: r.ReadTimeout, WriteTimeout: r.WriteTimeout, TLS: redisTLS(r.TLS, authServerRedisCAFile)}
	if s := r.SentinelConfig; s != nil {
		addrs := s.SentinelAddrs
		if len(addrs) == 0 {
			svc := s.SentinelService
			if svc == nil {
				return nil, fmt.Errorf("failed to resolve sentinel addresses: either sentinelAddrs or sentinelService must be specified")
			}
			ns, port := svc.Namespace, svc.Port
			if ns == "" {
				ns = owner.Namespace
			}
			if port == 0 {
				port = defaultSentinelPort
			}
			addrs = []string{fmt.Sprintf("%s.%s.svc.cluster.local:%d", svc.Name, ns, port)}
		}
		rc.SentinelConfig = &schema.RedisSentinel{MasterName: s.MasterName, SentinelAddrs: addrs, DB: int(s.DB)}
		rc.SentinelTLS = redisTLS(r.SentinelTLS, authServerSentinelCAFile)
	}
	return &schema.AuthServerStorage{Type: storageRedis, RedisConfig: rc, MaxDCRClients: maxClients}, nil
}

// redisTLS is a TLS block with its CA as the file mounted under caFile.
func redisTLS(t *thv1.RedisTLSConfig, caFile string) *schema.AuthServerRedisTLS {
	if t == nil {
		return nil
	}
	out := &schema.AuthServerRedisTLS{InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CACertSecretRef != nil {
		out.CACertFile = AuthServerRedisCAMountPath + "/" + caFile
	}
	return out
}

// redisCAFile is a Redis CA certificate's Secret volume.
type redisCAFile struct {
	volume, file string
	ref          *thv1.SecretKeyRef
}

// redisCAFiles are the CA certificates of Redis and of Sentinel, which
// ToolHive's operator mounts whenever a Redis block names them.
func redisCAFiles(st *authServerStorage) []redisCAFile {
	if st == nil || st.Redis == nil {
		return nil
	}
	var out []redisCAFile
	if t := st.Redis.TLS; t != nil && t.CACertSecretRef != nil {
		out = append(out, redisCAFile{authServerRedisCAVolume + "master", authServerRedisCAFile, t.CACertSecretRef})
	}
	if t := st.Redis.SentinelTLS; t != nil && t.CACertSecretRef != nil {
		out = append(out, redisCAFile{authServerRedisCAVolume + "sentinel", authServerSentinelCAFile, t.CACertSecretRef})
	}
	return out
}

// redisEnv are the secretKeyRef variables of the Redis ACL user.
func redisEnv(st *authServerStorage) []corev1.EnvVar {
	if st == nil || st.Type != storageRedis || st.Redis == nil || st.Redis.ACLUserConfig == nil {
		return nil
	}
	var env []corev1.EnvVar
	if r := st.Redis.ACLUserConfig.UsernameSecretRef; r != nil {
		env = append(env, SecretEnv(EnvAuthServerRedisUsername, r.Name, r.Key))
	}
	if r := st.Redis.ACLUserConfig.PasswordSecretRef; r != nil {
		env = append(env, SecretEnv(EnvAuthServerRedisPassword, r.Name, r.Key))
	}
	return env
}
