// Package ociimage assembles hivekeeper's container image with
// go-containerregistry, without a container engine and without a base
// image to pull: the layer under the binaries is made here from a few
// files, as the distroless static image the Dockerfile starts from holds
// them: the CA bundle, a passwd and group naming the non-root user 65532,
// and /tmp.
//
// The CA bundle is Mozilla's root store as the Go module
// golang.org/x/crypto/x509roots/fallback embeds it (pinned in go.mod), not
// a file of the building machine, so every machine builds the same image.
//
// The image is reproducible: every file and the config carry one time
// (Options.Created, the commit's by default), so the same binaries give
// the same digest, per platform and for the index of platforms.
package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's fixed facts, which the Dockerfile states too.
const (
	// NonRoot is the user and group the controller runs as: distroless'
	// "nonroot", numeric so a pod's runAsNonRoot can verify it.
	NonRoot = 65532
	// Entrypoint is where the binary lives in the image.
	Entrypoint = "/hivekeeper"
	// Plugin is where the kubectl plugin lives in the image, for a Job
	// that runs `kubectl-hivekeeper preflight` in the cluster.
	Plugin = "/kubectl-hivekeeper"
	// CABundlePath is where the CA certificates are: Go's crypto/x509
	// reads this path on Linux.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// Source is the project's repository, for the source label.
	Source = "https://github.com/hivekeeper/hivekeeper"
	// CALabel names where the CA bundle came from.
	CALabel = "dev.hivekeeper.ca-certificates"
	// RefName is the annotation of an OCI layout's entry that names its
	// tag.
	RefName = "org.opencontainers.image.ref.name"
	// caModule is the Go module the CA bundle comes from.
	caModule = "golang.org/x/crypto/x509roots/fallback"
)

// Options are the facts every platform's image shares.
type Options struct {
	// Version is the release: the version label and the layout's tag.
	Version string
	// Revision is the source commit, for a label; empty: no label.
	Revision string
	// Created is the time of the image and of every file in it.
	Created time.Time
	// CABundle is the PEM bundle at CABundlePath; CASource says where it
	// came from, for a label.
	CABundle []byte
	CASource string
}

// MozillaRoots is Mozilla's root store as PEM, as the Go module
// golang.org/x/crypto/x509roots/fallback embeds it, and the module's
// version. Roots NSS trusts only for certificates issued before a date
// (distrust-after) are left out: a PEM bundle cannot carry that
// constraint, and a client reading the file would trust them for good.
func MozillaRoots() ([]byte, string, error) {
	var buf bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if _, err := x509.ParseCertificate(r.Certificate); err != nil {
			return nil, "", fmt.Errorf("a root of %s: %w", caModule, err)
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, "", err
		}
	}
	if buf.Len() == 0 {
		return nil, "", fmt.Errorf("%s holds no root", caModule)
	}
	source := caModule
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == caModule {
				source += "@" + d.Version
			}
		}
	}
	return buf.Bytes(), source, nil
}

// Image is the image of one linux architecture: the base layer, then the
// controller and, when given, the kubectl plugin.
func Image(o Options, arch string, controller, plugin []byte) (v1.Image, error) {
	appFiles := []file{{path: Entrypoint[1:], mode: 0o755, data: controller}}
	if plugin != nil {
		appFiles = append(appFiles, file{path: Plugin[1:], mode: 0o755, data: plugin})
	}
	base, err := layer(o.Created, []file{
		{path: "etc/", dir: true, mode: 0o755},
		{path: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", NonRoot)},
		{path: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil,
			"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot)},
		{path: "etc/ssl/", dir: true, mode: 0o755},
		{path: "etc/ssl/certs/", dir: true, mode: 0o755},
		{path: CABundlePath[1:], mode: 0o644, data: o.CABundle},
		{path: "home/", dir: true, mode: 0o755},
		{path: "home/nonroot/", dir: true, mode: 0o700, owner: NonRoot},
		{path: "tmp/", dir: true, mode: 0o1777},
	})
	if err != nil {
		return nil, err
	}
	app, err := layer(o.Created, appFiles)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), base, app)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = arch, "linux", v1.Time{Time: o.Created}
	cf.Config = v1.Config{
		User:       strconv.Itoa(NonRoot) + ":" + strconv.Itoa(NonRoot),
		Entrypoint: []string{Entrypoint},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=" + CABundlePath},
		WorkingDir: "/",
		// Metrics and health probes (--metrics-bind-address,
		// --health-probe-bind-address).
		ExposedPorts: map[string]struct{}{"8080/tcp": {}, "8081/tcp": {}},
		Labels:       o.labels(),
	}
	return mutate.ConfigFile(img, cf)
}

// labels are the OCI labels of each image; the index carries them as
// annotations.
func (o Options) labels() map[string]string {
	labels := map[string]string{
		"org.opencontainers.image.title":       "hivekeeper",
		"org.opencontainers.image.description": "Kubernetes controller for the ToolHive MCP API (toolhive.stacklok.dev/v1beta1)",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     o.Created.Format(time.RFC3339),
	}
	if o.Revision != "" {
		labels["org.opencontainers.image.revision"] = o.Revision
	}
	if o.CASource != "" {
		labels[CALabel] = o.CASource
	}
	return labels
}

// Index is the multi-platform image: one linux image per architecture,
// in the order given.
func Index(o Options, arches []string, images []v1.Image) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for i, img := range images {
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: arches[i]},
		}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	return mutate.Annotations(idx, o.labels()).(v1.ImageIndex), nil
}

// WriteLayout writes an image or an index (one entry, tagged version) as
// an OCI image layout in dir, which it replaces.
func WriteLayout(dir, version string, img v1.Image, idx v1.ImageIndex) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	ann := layout.WithAnnotations(map[string]string{RefName: version})
	if idx != nil {
		return p.AppendIndex(idx, ann)
	}
	return p.AppendImage(img, ann)
}

// file is one entry of a layer.
type file struct {
	path  string
	dir   bool
	mode  int64
	owner int
	data  []byte
}

// layer makes an uncompressed-in-memory, gzip-on-write layer of files, in
// path order, every entry dated created.
func layer(created time.Time, files []file) (v1.Layer, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.path, Mode: f.mode, ModTime: created, Uid: f.owner, Gid: f.owner, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
