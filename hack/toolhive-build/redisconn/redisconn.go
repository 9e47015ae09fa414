// Package redisconn stands in for github.com/stacklok/toolhive-core/redisconn
// v0.0.58 when hivekeeper's tests build ToolHive's runtime: the Go module
// proxy serves that module's go.mod but not its source, so ToolHive v0.63.0
// cannot be built without a replacement. It is written for hivekeeper from
// the names and fields ToolHive's own call sites use (Config, TLSConfig,
// SentinelConfig, NewClient, BuildTLSConfig), on go-redis.
//
// What it does: one go-redis client for a standalone server, a cluster or a
// Sentinel-managed master, with optional TLS (a CA bundle or no
// verification) and ACL credentials, checked with a PING before it is
// returned. What it does not do: ToolHive's own defaults and validation
// beyond that (pool sizes, retry policy, timeouts ToolHive may pick when
// none are given), and a Sentinel TLS setting that differs from the
// master's, which go-redis cannot express (NewClient refuses it).
//
// hivekeeper's suites use it only where ToolHive's runner or vmcp connect
// to Redis for session storage; ToolHive's operator never calls it.
package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config says where Redis is and how to reach it. Exactly one mode is
// used: SentinelConfig when set, else a cluster when ClusterMode, else the
// standalone server at Addr.
type Config struct {
	// Addr is host:port of a standalone server or a cluster's seed node.
	Addr string
	// ClusterMode treats Addr as a Redis Cluster node.
	ClusterMode bool
	// SentinelConfig selects a Sentinel-managed master.
	SentinelConfig *SentinelConfig
	// DB is the logical database (standalone and Sentinel only).
	DB int
	// Username and Password are the ACL credentials; both empty means none.
	Username string
	Password string
	// DialTimeout, ReadTimeout and WriteTimeout are go-redis's; zero keeps
	// go-redis's defaults.
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// TLS, when set, encrypts the connection to the data nodes.
	TLS *TLSConfig
	// SentinelTLS is the TLS of the connections to the sentinels. go-redis
	// uses one TLS setting for both, so it must be nil or equal to TLS.
	SentinelTLS *TLSConfig
}

// SentinelConfig names a master and the sentinels that know it.
type SentinelConfig struct {
	MasterName    string
	SentinelAddrs []string
}

// TLSConfig is the TLS of a Redis connection.
type TLSConfig struct {
	// InsecureSkipVerify skips the server certificate check.
	InsecureSkipVerify bool
	// CACert is a PEM bundle the server certificate must chain to; empty
	// means the system roots.
	CACert []byte
}

// BuildTLSConfig turns c into a crypto/tls configuration (TLS 1.2 or
// later). A nil c means no TLS and gives nil. A CA bundle without any
// certificate is an error, never a silent fall back to the system roots.
func BuildTLSConfig(c *TLSConfig) (*tls.Config, error) {
	if c == nil {
		return nil, nil
	}
	out := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.InsecureSkipVerify} //nolint:gosec // the caller asked for it
	if len(c.CACert) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(c.CACert) {
			return nil, errors.New("redis CA certificate: no PEM certificate found")
		}
		out.RootCAs = pool
	}
	return out, nil
}

// NewClient connects as cfg says and returns the client once Redis
// answers a PING within ctx; on any error no client is left open.
func NewClient(ctx context.Context, cfg *Config) (redis.UniversalClient, error) {
	if cfg == nil {
		return nil, errors.New("redis config is nil")
	}
	tlsCfg, err := BuildTLSConfig(cfg.TLS)
	if err != nil {
		return nil, err
	}
	opts := &redis.UniversalOptions{
		DB:           cfg.DB,
		Username:     cfg.Username,
		Password:     cfg.Password,
		DialTimeout:  cfg.DialTimeout,
		ReadTimeout:  cfg.ReadTimeout,
		WriteTimeout: cfg.WriteTimeout,
		TLSConfig:    tlsCfg,
	}
	switch {
	case cfg.SentinelConfig != nil:
		s := cfg.SentinelConfig
		if s.MasterName == "" || len(s.SentinelAddrs) == 0 {
			return nil, errors.New("redis sentinel: a master name and at least one sentinel address are required")
		}
		if cfg.SentinelTLS != nil && !reflect.DeepEqual(cfg.SentinelTLS, cfg.TLS) {
			return nil, errors.New("redis sentinel: a sentinel TLS setting different from the master's is not supported by this build")
		}
		opts.MasterName, opts.Addrs = s.MasterName, s.SentinelAddrs
	case cfg.Addr == "":
		return nil, errors.New("redis address is required")
	case cfg.ClusterMode:
		opts.Addrs, opts.IsClusterMode, opts.DB = []string{cfg.Addr}, true, 0
	default:
		opts.Addrs = []string{cfg.Addr}
	}
	client := redis.NewUniversalClient(opts)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redis ping: %w", err)
	}
	return client, nil
}
