// Command image builds hivekeeper's container image without a container
// engine (`make image`): go-containerregistry assembles the layers and the
// config in memory and writes them as an OCI image layout and as a tarball
// that `docker load` and `crane push` read. There is no base image to pull:
// the one layer under the binary is made here from a few files, as the
// distroless static image the Dockerfile starts from holds them: the CA
// bundle, a passwd and group naming the non-root user 65532, and /tmp.
//
// The image is reproducible: every file and the config carry one time
// (--created, from the commit by default), so the same binary and CA
// bundle give the same digest.
//
//	go run ./hack/image --binary bin/hivekeeper --version v1.2.3 --out bin/image
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
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
	// CABundle is where the CA certificates are: Go's crypto/x509 reads
	// this path on Linux.
	CABundle = "/etc/ssl/certs/ca-certificates.crt"
	// Source is the project's repository, for the source label.
	Source = "https://github.com/hivekeeper/hivekeeper"
	// TarballFile and LayoutDir are the two outputs in --out.
	TarballFile = "hivekeeper.tar"
	LayoutDir   = "oci"
)

func main() {
	var (
		binary    = flag.String("binary", "bin/hivekeeper", "the static linux hivekeeper binary")
		plugin    = flag.String("plugin", "", "the static linux kubectl-hivekeeper binary (empty: none in the image)")
		ca        = flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to ship (Debian's ca-certificates package installs it here)")
		caVersion = flag.String("ca-certificates-version", "", "the version of the package the CA bundle comes from, for a label (empty: no label)")
		version   = flag.String("version", "dev", "the version: the tag and the version label")
		revision  = flag.String("revision", "", "the source revision, for a label (empty: no label)")
		created   = flag.Int64("created", 0, "the creation time of the image and its files, in seconds since the epoch")
		repo      = flag.String("repository", "hivekeeper", "the repository of the tag written into the tarball")
		arch      = flag.String("arch", runtime.GOARCH, "the binary's architecture")
		out       = flag.String("out", "bin/image", "the folder of the outputs: "+LayoutDir+"/ and "+TarballFile)
	)
	flag.Parse()
	if err := build(*binary, *plugin, *ca, *caVersion, *version, *revision, *repo, *arch, *out, time.Unix(*created, 0).UTC()); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(binary, plugin, ca, caVersion, version, revision, repo, arch, out string, created time.Time) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("the binary (run `make build`): %w", err)
	}
	appFiles := []file{{path: Entrypoint[1:], mode: 0o755, data: bin}}
	if plugin != "" {
		p, err := os.ReadFile(plugin)
		if err != nil {
			return fmt.Errorf("the kubectl plugin (run `make build`): %w", err)
		}
		appFiles = append(appFiles, file{path: Plugin[1:], mode: 0o755, data: p})
	}
	bundle, err := os.ReadFile(ca)
	if err != nil {
		return fmt.Errorf("the CA bundle (install Debian's ca-certificates package): %w", err)
	}
	base, err := layer(created, []file{
		{path: "etc/", dir: true, mode: 0o755},
		{path: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", NonRoot)},
		{path: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil,
			"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot)},
		{path: "etc/ssl/", dir: true, mode: 0o755},
		{path: "etc/ssl/certs/", dir: true, mode: 0o755},
		{path: CABundle[1:], mode: 0o644, data: bundle},
		{path: "home/", dir: true, mode: 0o755},
		{path: "home/nonroot/", dir: true, mode: 0o700, owner: NonRoot},
		{path: "tmp/", dir: true, mode: 0o1777},
	})
	if err != nil {
		return err
	}
	app, err := layer(created, appFiles)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), base, app)
	if err != nil {
		return err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       "hivekeeper",
		"org.opencontainers.image.description": "Kubernetes controller for the ToolHive MCP API (toolhive.stacklok.dev/v1beta1)",
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	if revision != "" {
		labels["org.opencontainers.image.revision"] = revision
	}
	if caVersion != "" {
		labels["dev.hivekeeper.ca-certificates"] = "debian " + caVersion
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = arch, "linux", v1.Time{Time: created}
	cf.Config = v1.Config{
		User:       strconv.Itoa(NonRoot) + ":" + strconv.Itoa(NonRoot),
		Entrypoint: []string{Entrypoint},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=" + CABundle},
		WorkingDir: "/",
		// Metrics and health probes (--metrics-bind-address,
		// --health-probe-bind-address).
		ExposedPorts: map[string]struct{}{"8080/tcp": {}, "8081/tcp": {}},
		Labels:       labels,
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	tag, err := name.NewTag(repo + ":" + version)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	dir := filepath.Join(out, LayoutDir)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": version,
	})); err != nil {
		return err
	}
	if err := tarball.WriteToFile(filepath.Join(out, TarballFile), tag, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s\n  OCI layout: %s\n  tarball:    %s (docker load -i, crane push)\n", tag, digest, dir, filepath.Join(out, TarballFile))
	return nil
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
