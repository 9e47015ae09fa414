package secureserving

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// Names of the certificate and key in the certificate folder: what a
// kubernetes.io/tls Secret mounted as a volume contains.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// TLSConfig is the server side of the secure endpoint. With certDir set it
// serves <certDir>/tls.crt and tls.key, read again whenever either file
// changes, so a certificate rotated in its Secret (by cert-manager, say) is
// picked up without a restart. Without it, it serves a self-signed
// certificate made at start for host, as kube-controller-manager does when
// given no certificate: scrapers then skip verification or pin it.
func TLSConfig(certDir, host string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if certDir == "" {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("generating a self-signed certificate: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
		return cfg, nil
	}
	r := &certReloader{cert: filepath.Join(certDir, CertFile), key: filepath.Join(certDir, KeyFile)}
	// Fail at start, not at the first scrape, when the files are unusable.
	if _, err := r.get(); err != nil {
		return nil, err
	}
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return r.get() }
	return cfg, nil
}

// certReloader keeps the last certificate loaded from its files and loads
// them again when their modification times change.
type certReloader struct {
	cert, key string

	mu      sync.Mutex
	loaded  *tls.Certificate
	modTime [2]time.Time
}

func (r *certReloader) get() (*tls.Certificate, error) {
	var mod [2]time.Time
	for i, f := range []string{r.cert, r.key} {
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		mod[i] = st.ModTime()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.loaded != nil && mod == r.modTime {
		return r.loaded, nil
	}
	cert, err := tls.LoadX509KeyPair(r.cert, r.key)
	if err != nil {
		if r.loaded != nil {
			// Half-written during a rotation: keep serving the old one.
			return r.loaded, nil
		}
		return nil, fmt.Errorf("loading %s and %s: %w", r.cert, r.key, err)
	}
	r.loaded, r.modTime = &cert, mod
	return r.loaded, nil
}
