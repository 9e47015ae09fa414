// Package framework runs a real etcd and kube-apiserver for hivekeeper's
// integration tests, benchmarks and `make run`.
//
// A fake clientset cannot show what the API server does to hivekeeper's
// writes: defaulting, CEL validation, pruning, status subresources,
// optimistic locking, RBAC. Those are where controllers break in the field,
// so tests that claim "zero writes at steady state" or "unknown fields
// survive" run against the real thing. Both binaries come from
// hack/test-binaries.sh. By default there is no controller-manager,
// scheduler or kubelet, so Deployments get no pods, namespaces stay
// Terminating and no garbage collector runs; Options.Cluster adds them,
// with kwok's fake nodes for kubelets (cluster.go).
//
// Test packages call Main from TestMain and Get from each test. Other
// programs use Start and Stop.
package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options configure Start.
type Options struct {
	// BinDir holds kube-apiserver and etcd; empty means FindBinaries.
	BinDir string
	// TempDir is the parent of the server's folder; empty means os.TempDir.
	TempDir string
	// CRDDir, when set, is a folder of CRD manifests installed after the
	// API server is ready; Start returns once they are Established and
	// served. The proxy runners' ClusterRoles (pkg/rbac) are installed
	// always, as the Helm chart would.
	CRDDir string
	// ExtraAPIServerArgs are appended to kube-apiserver's flags; a flag
	// given twice takes the later value.
	ExtraAPIServerArgs []string
	// StartTimeout bounds each wait for readiness; 0 means 5 minutes. A
	// quiet machine needs seconds; the bound only ends a wait that will
	// never succeed, so two cores busy with other work do not fail a start
	// that is merely slow.
	StartTimeout time.Duration
	// Cluster also runs kube-controller-manager, kube-scheduler and kwok
	// with ClusterNodes fake nodes (cluster.go), so Deployments get pods
	// that become Running and Ready, the garbage collector and the
	// namespace controller run, and pods must name a ServiceAccount that
	// exists, as in a real cluster.
	Cluster bool
}

// Server is a running etcd plus kube-apiserver on loopback ports, with all
// state in one temporary folder.
type Server struct {
	// Dir is the server's temporary folder, removed by Stop. Callers may
	// keep package-lifetime scratch files there.
	Dir string
	// URL is the API server's https address.
	URL string
	// Config authenticates as an admin in system:masters through a static
	// token. It is unthrottled (QPS < 0), so tests measure the code under
	// test rather than the client-side rate limiter.
	Config *rest.Config
	// Kubeconfig is the path of an admin kubeconfig file with the same
	// credentials, for kubectl and for the hivekeeper binary.
	Kubeconfig string
	// EtcdURL is etcd's client address, for tests that check how an
	// object is stored (StoredAPIVersion).
	EtcdURL string

	mu        sync.Mutex
	ca        *certAuthority
	etcd      *process
	apiserver *process
	timeout   time.Duration
	stopped   bool

	// The rest of the control plane, with Options.Cluster only.
	controllerManager, scheduler, kwok *process
}

const (
	adminUser = "hivekeeper-admin"
	// ServiceClusterIPRange is a /16, so a few thousand Services fit when a
	// benchmark creates one per MCPServer.
	ServiceClusterIPRange = "10.96.0.0/16"
	// serviceAccountIssuer is what a real cluster commonly uses, so tokens
	// look familiar.
	serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
	stopGrace            = 10 * time.Second
)

var errPortInUse = errors.New("port already in use")

// Start runs etcd and kube-apiserver on free 127.0.0.1 ports and waits for
// /readyz (and the CRDs, when Options.CRDDir is set). A port taken by someone
// else between picking and binding is retried with new ports.
func Start(opts Options) (*Server, error) {
	if opts.BinDir == "" {
		dir, err := FindBinaries()
		if err != nil {
			return nil, err
		}
		opts.BinDir = dir
	}
	if err := checkBinaries(opts.BinDir, apiServerBinaries...); err != nil {
		return nil, err
	}
	if opts.Cluster {
		if err := checkBinaries(opts.BinDir, clusterBinaries...); err != nil {
			return nil, fmt.Errorf("%w; run `make test-binaries` to build the rest of the control plane", err)
		}
	}
	if opts.TempDir == "" {
		opts.TempDir = os.TempDir()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 5 * time.Minute
	}
	removeStaleDirs(opts.TempDir)

	var err error
	for range 3 {
		var s *Server
		if s, err = start(opts); err == nil {
			return s, nil
		}
		if !errors.Is(err, errPortInUse) {
			break
		}
	}
	return nil, err
}

func start(opts Options) (_ *Server, err error) {
	dir, err := os.MkdirTemp(opts.TempDir, dirPrefix)
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, timeout: opts.StartTimeout}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, err
	}

	s.ca, err = newCertAuthority()
	if err != nil {
		return nil, err
	}
	servingCert, servingKey, err := s.ca.servingCert()
	if err != nil {
		return nil, err
	}
	saKey, saPub, err := serviceAccountKeys()
	if err != nil {
		return nil, err
	}
	token, err := randomToken()
	if err != nil {
		return nil, err
	}
	path := func(name string) string { return filepath.Join(dir, name) }
	// The static token file holds only the admin: it cannot change while
	// the server runs, so per-user identities are client certificates.
	if err := writeFiles(dir, map[string][]byte{
		"ca.crt":        s.ca.certPEM,
		"apiserver.crt": servingCert,
		"apiserver.key": servingKey,
		"sa.key":        saKey,
		"sa.pub":        saPub,
		"tokens.csv":    fmt.Appendf(nil, "%s,%s,%s,\"system:masters\"\n", token, adminUser, adminUser),
	}); err != nil {
		return nil, err
	}

	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	s.URL = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	s.EtcdURL = fmt.Sprintf("http://127.0.0.1:%d", etcdClient)

	s.etcd = &process{
		name:    "etcd",
		path:    filepath.Join(opts.BinDir, "etcd"),
		logPath: path("etcd.log"),
		args: []string{
			"--name=hivekeeper",
			"--data-dir=" + path("etcd-data"),
			fmt.Sprintf("--listen-client-urls=http://127.0.0.1:%d", etcdClient),
			fmt.Sprintf("--advertise-client-urls=http://127.0.0.1:%d", etcdClient),
			fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", etcdPeer),
			fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", etcdPeer),
			fmt.Sprintf("--initial-cluster=hivekeeper=http://127.0.0.1:%d", etcdPeer),
			"--initial-cluster-state=new",
			// Durability is worthless in a throwaway folder; fsync on a
			// shared disk is what makes test API servers slow.
			"--unsafe-no-fsync=true",
		},
	}
	var admission []string
	if !opts.Cluster {
		// Without a controller manager no namespace has a "default"
		// ServiceAccount, and this plugin would reject every Pod.
		admission = []string{"--disable-admission-plugins=ServiceAccount"}
	}
	s.apiserver = &process{
		name:    "kube-apiserver",
		path:    filepath.Join(opts.BinDir, "kube-apiserver"),
		logPath: path("apiserver.log"),
		args: append(append([]string{
			fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdClient),
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", apiPort),
			"--cert-dir=" + path("certs"),
			"--tls-cert-file=" + path("apiserver.crt"),
			"--tls-private-key-file=" + path("apiserver.key"),
			"--client-ca-file=" + path("ca.crt"),
			"--token-auth-file=" + path("tokens.csv"),
			"--authorization-mode=RBAC",
			"--service-account-issuer=" + serviceAccountIssuer,
			"--service-account-key-file=" + path("sa.pub"),
			"--service-account-signing-key-file=" + path("sa.key"),
			"--service-cluster-ip-range=" + ServiceClusterIPRange,
			// The endpoint reconciler rejects a loopback advertise address
			// and would log that every few seconds.
			"--endpoint-reconciler-type=none",
			"--profiling=false",
		}, admission...), opts.ExtraAPIServerArgs...),
	}

	s.Config = &rest.Config{
		Host:            s.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.ca.certPEM},
		QPS:             -1,
	}
	s.Kubeconfig = path("kubeconfig")
	if err := s.writeKubeconfig(s.Kubeconfig, token); err != nil {
		return nil, err
	}

	if err := s.etcd.start(); err != nil {
		return nil, err
	}
	// kube-apiserver retries etcd itself, so it starts at once; waitReady
	// watches both processes, so an etcd that failed ends the wait early.
	if err := s.apiserver.start(); err != nil {
		return nil, err
	}
	if err := s.waitReady(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if err := InstallRunnerClusterRoles(ctx, s.Config); err != nil {
		return nil, err
	}
	if opts.CRDDir != "" {
		if err := InstallCRDs(ctx, s.Config, opts.CRDDir); err != nil {
			return nil, fmt.Errorf("installing CRDs from %s: %w", opts.CRDDir, err)
		}
	}
	if opts.Cluster {
		if err := s.startCluster(ctx, opts.BinDir); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Server) writeKubeconfig(path, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hivekeeper-test"] = &clientcmdapi.Cluster{Server: s.URL, CertificateAuthorityData: s.ca.certPEM}
	cfg.AuthInfos[adminUser] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["hivekeeper-test"] = &clientcmdapi.Context{Cluster: "hivekeeper-test", AuthInfo: adminUser, Namespace: "default"}
	cfg.CurrentContext = "hivekeeper-test"
	return clientcmd.WriteToFile(*cfg, path)
}

// waitReady polls /readyz, which turns 200 only after etcd is reachable and
// every post-start hook (RBAC bootstrap roles, system namespaces, priority
// classes) finished.
func (s *Server) waitReady() error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.ca.certPEM)
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	defer client.CloseIdleConnections()
	deadline := time.After(s.timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+s.Config.BearerToken)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-s.etcd.exited():
			return s.startupError(s.etcd.exitError())
		case <-s.apiserver.exited():
			return s.startupError(s.apiserver.exitError())
		case <-deadline:
			return s.startupError(fmt.Errorf("kube-apiserver not ready after %v (last /readyz: %s)", s.timeout, last))
		case <-tick.C:
		}
	}
}

// startupError attaches both logs' tails: the reason a server did not come
// up is almost always in the last lines of one of them.
func (s *Server) startupError(cause error) error {
	err := fmt.Errorf("%w\n--- etcd log (tail) ---\n%s\n--- kube-apiserver log (tail) ---\n%s",
		cause, s.etcd.tail(30), s.apiserver.tail(30))
	if s.etcd.logContains("address already in use") || s.apiserver.logContains("address already in use") {
		return fmt.Errorf("%w: %w", errPortInUse, err)
	}
	return err
}

// ConfigForUser returns a config that authenticates as user with groups
// through a client certificate signed by the server's CA. Unlike
// impersonation this is the real identity, so RBAC applies exactly as it
// would to that user. It panics only if the system's random source fails.
func (s *Server) ConfigForUser(user string, groups ...string) *rest.Config {
	certPEM, keyPEM, err := s.ca.clientCert(user, groups)
	if err != nil {
		panic(fmt.Sprintf("framework: minting a client certificate for %q: %v", user, err))
	}
	return &rest.Config{
		Host: s.URL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   s.ca.certPEM,
			CertData: certPEM,
			KeyData:  keyPEM,
		},
		QPS: -1,
	}
}

// WriteKubeconfigForUser writes a kubeconfig to path that authenticates as
// user in groups by a client certificate (see ConfigForUser): a process
// given it is told apart from the others in an audit log by its user.
func (s *Server) WriteKubeconfigForUser(path, user string, groups ...string) error {
	certPEM, keyPEM, err := s.ca.clientCert(user, groups)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hivekeeper-test"] = &clientcmdapi.Cluster{Server: s.URL, CertificateAuthorityData: s.ca.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["hivekeeper-test"] = &clientcmdapi.Context{Cluster: "hivekeeper-test", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "hivekeeper-test"
	return clientcmd.WriteToFile(*cfg, path)
}

// ConfigForToken returns a config that authenticates with a bearer
// token, such as a ServiceAccount's bound token from a TokenRequest: the
// way a controller in a pod authenticates.
func (s *Server) ConfigForToken(token string) *rest.Config {
	return &rest.Config{Host: s.URL, TLSClientConfig: rest.TLSClientConfig{CAData: s.ca.certPEM}, BearerToken: token, QPS: -1}
}

// WriteKubeconfigForToken writes a kubeconfig to path that authenticates
// with token (see ConfigForToken).
func (s *Server) WriteKubeconfigForToken(path, token string) error {
	return s.writeKubeconfig(path, token)
}

// EtcdPID and APIServerPID return the processes' PIDs (0 when not running),
// for tests that prove nothing outlives Stop.
func (s *Server) EtcdPID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.etcd.pid()
}

// APIServerPID returns the current kube-apiserver's PID; it changes on
// every restart.
func (s *Server) APIServerPID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apiserver.pid()
}

// StopAPIServer stops kube-apiserver gracefully (SIGTERM, then SIGKILL after
// a grace period) and leaves etcd running, so fault tests can keep the API
// away for as long as they like.
func (s *Server) StopAPIServer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiserver.stop(stopGrace)
}

// KillAPIServer kills kube-apiserver with SIGKILL: a crash, with watches
// and in-flight requests cut without a goodbye.
func (s *Server) KillAPIServer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiserver.stop(0)
}

// StartAPIServer starts kube-apiserver again with the same port, flags,
// certificates and etcd data, and waits for /readyz. Existing rest.Configs
// and kubeconfigs keep working.
func (s *Server) StartAPIServer() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("server was stopped")
	}
	if err := s.apiserver.start(); err != nil {
		return err
	}
	if err := s.waitReady(); err != nil {
		s.apiserver.stop(0)
		return err
	}
	return nil
}

// RestartAPIServer is StopAPIServer followed by StartAPIServer.
func (s *Server) RestartAPIServer() error {
	s.StopAPIServer()
	return s.StartAPIServer()
}

// Stop stops kube-apiserver, then etcd, waits until both are reaped and
// removes the folder. It is safe to call more than once.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	// The API server's clients first, then kube-apiserver, so it does not
	// log etcd connection errors while shutting down.
	s.stopCluster()
	if s.apiserver != nil {
		s.apiserver.stop(stopGrace)
	}
	if s.etcd != nil {
		s.etcd.stop(stopGrace)
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		return fmt.Errorf("removing %s: %w", s.Dir, err)
	}
	return nil
}
