package main

import (
	"errors"

	"github.com/spf13/pflag"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// defaultRedisKey is the password key of --default-redis-secret-name when
// --default-redis-secret-key is not given, as in ToolHive's operator.
const defaultRedisKey = "redis-password"

// redisFlags are the --default-redis-* flags: the Redis a workload
// without session storage of its own falls back to. They are ToolHive's
// operator's TOOLHIVE_DEFAULT_REDIS_* variables, with its rules.
type redisFlags struct {
	addr, secretName, secretKey string
	tls                         bool
	caName, caKey               string
}

func (f *redisFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.addr, "default-redis-addr", "", "host:port of the Redis that MCPServers, MCPRemoteProxies and VirtualMCPServers without spec.sessionStorage keep their sessions in (MCPServers and VirtualMCPServers also with a memory provider). Empty: no default, and the other --default-redis-* flags are ignored.")
	fs.StringVar(&f.secretName, "default-redis-secret-name", "", "Secret, in each workload's namespace, holding the default Redis's password; given only to workloads without spec.sessionStorage.")
	fs.StringVar(&f.secretKey, "default-redis-secret-key", "", "Key of --default-redis-secret-name; \""+defaultRedisKey+"\" when empty.")
	fs.BoolVar(&f.tls, "default-redis-tls-enabled", false, "Connect to the default Redis over TLS, verified with the system roots or --default-redis-tls-ca-secret-name.")
	fs.StringVar(&f.caName, "default-redis-tls-ca-secret-name", "", "Secret, in each workload's namespace, holding the CA bundle that verifies the default Redis; needs --default-redis-tls-enabled.")
	fs.StringVar(&f.caKey, "default-redis-tls-ca-secret-key", "", "Key of --default-redis-tls-ca-secret-name.")
}

// defaultRedis checks the flags as ToolHive's operator checks its
// variables, in the same order, and returns the default Redis, or nil
// without --default-redis-addr. An invalid combination stops the process
// at start rather than run workloads without the TLS asked for.
func (f *redisFlags) defaultRedis() (*wiring.DefaultRedis, error) {
	switch {
	case (f.caName == "") != (f.caKey == ""):
		return nil, errors.New("--default-redis-tls-ca-secret-name and --default-redis-tls-ca-secret-key must both be set")
	case f.caName != "" && !f.tls:
		return nil, errors.New("--default-redis-tls-ca-secret-name requires --default-redis-tls-enabled")
	case f.addr == "" && f.tls:
		return nil, errors.New("--default-redis-tls-enabled requires --default-redis-addr")
	case f.addr == "":
		return nil, nil
	}
	d := &wiring.DefaultRedis{Addr: f.addr, SecretName: f.secretName, SecretKey: f.secretKey}
	if d.SecretName != "" && d.SecretKey == "" {
		d.SecretKey = defaultRedisKey
	}
	if f.tls {
		d.TLS = &thv1.RedisTLSConfig{}
		if f.caName != "" {
			d.TLS.CACertSecretRef = &thv1.SecretKeyRef{Name: f.caName, Key: f.caKey}
		}
	}
	return d, nil
}
