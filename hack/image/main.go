// Command image builds hivekeeper's container image for one linux
// architecture without a container engine (`make image`): package
// hack/internal/ociimage assembles it with go-containerregistry, and it is
// written as an OCI image layout and as a tarball that `docker load` and
// `crane push` read. `make release` builds the multi-platform index
// (hack/release).
//
// The CA bundle is Mozilla's, from a Go module pinned in go.mod, unless
// --ca-certificates names a file; the image is reproducible: every file
// and the config carry one time (--created, from the commit by default).
//
//	go run ./hack/image --binary bin/hivekeeper --version v1.2.3 --out bin/image
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/hivekeeper/hivekeeper/hack/internal/ociimage"
)

// TarballFile and LayoutDir are the two outputs in --out.
const (
	TarballFile = "hivekeeper.tar"
	LayoutDir   = "oci"
)

func main() {
	var (
		binary   = flag.String("binary", "bin/hivekeeper", "the static linux hivekeeper binary")
		plugin   = flag.String("plugin", "", "the static linux kubectl-hivekeeper binary (empty: none in the image)")
		ca       = flag.String("ca-certificates", "", "a PEM CA bundle to ship instead of Mozilla's roots from the Go module golang.org/x/crypto/x509roots/fallback")
		version  = flag.String("version", "dev", "the version: the tag and the version label")
		revision = flag.String("revision", "", "the source revision, for a label (empty: no label)")
		created  = flag.Int64("created", 0, "the creation time of the image and its files, in seconds since the epoch")
		repo     = flag.String("repository", "hivekeeper", "the repository of the tag written into the tarball")
		arch     = flag.String("arch", runtime.GOARCH, "the binary's architecture")
		out      = flag.String("out", "bin/image", "the folder of the outputs: "+LayoutDir+"/ and "+TarballFile)
	)
	flag.Parse()
	if err := build(*binary, *plugin, *ca, *version, *revision, *repo, *arch, *out, time.Unix(*created, 0).UTC()); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(binary, plugin, ca, version, revision, repo, arch, out string, created time.Time) error {
	o := ociimage.Options{Version: version, Revision: revision, Created: created}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("the binary (run `make build`): %w", err)
	}
	var p []byte
	if plugin != "" {
		if p, err = os.ReadFile(plugin); err != nil {
			return fmt.Errorf("the kubectl plugin (run `make build`): %w", err)
		}
	}
	if ca != "" {
		if o.CABundle, err = os.ReadFile(ca); err != nil {
			return fmt.Errorf("the CA bundle: %w", err)
		}
		o.CASource = "file " + filepath.Base(ca)
	} else if o.CABundle, o.CASource, err = ociimage.MozillaRoots(); err != nil {
		return err
	}
	img, err := ociimage.Image(o, arch, bin, p)
	if err != nil {
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
	if err := ociimage.WriteLayout(dir, version, img, nil); err != nil {
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
