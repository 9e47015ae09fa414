// Package image checks the container image `make image` builds
// (hack/image): the OCI layout and the tarball hold the same image, whose
// config runs the binary as the non-root user 65532 with the version and
// source labels, whose filesystem has the CA bundle and the user, and
// whose binary and kubectl plugin run. `make test` builds the image and
// names its folder in $HIVEKEEPER_IMAGE. It also checks that the
// Dockerfile's context (.dockerignore, the COPY lines) holds every file
// the two binaries need.
package image

import (
	"archive/tar"
	"crypto/x509"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// ImageEnv names the folder `make image` wrote (hack/image's --out).
const ImageEnv = "HIVEKEEPER_IMAGE"

func TestImage(t *testing.T) {
	dir := os.Getenv(ImageEnv)
	if dir == "" {
		if testing.Short() {
			t.Skip("$" + ImageEnv + " is not set (make test builds the image and sets it); skipped with -short")
		}
		framework.Missing(t, "$"+ImageEnv+" is not set: `make test` builds the image and sets it")
	}
	p, err := layout.FromPath(filepath.Join(dir, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	index, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest.Manifests) != 1 {
		t.Fatalf("the OCI layout holds %d images, want 1", len(manifest.Manifests))
	}
	img, err := p.Image(manifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	// The tarball is read as `crane push` and `docker load` read it.
	fromTar, err := tarball.ImageFromPath(filepath.Join(dir, "hivekeeper.tar"), nil)
	if err != nil {
		t.Fatal(err)
	}
	layoutID, _ := img.ConfigName()
	tarID, _ := fromTar.ConfigName()
	if layoutID != tarID {
		t.Errorf("the tarball's image (config %s) is not the layout's (config %s)", tarID, layoutID)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" || len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/hivekeeper" || cf.OS != "linux" {
		t.Errorf("config: user %q, entrypoint %q, os %q", c.User, c.Entrypoint, cf.OS)
	}
	version := c.Labels["org.opencontainers.image.version"]
	if version == "" || c.Labels["org.opencontainers.image.source"] == "" {
		t.Errorf("labels lack the version or the source: %v", c.Labels)
	}
	if manifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
		t.Errorf("the layout's reference %q is not the version %q", manifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"], version)
	}

	files := extract(t, img)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(files["etc/ssl/certs/ca-certificates.crt"]) {
		t.Error("no CA certificate in /etc/ssl/certs/ca-certificates.crt")
	}
	if !strings.Contains(string(files["etc/passwd"]), ":65532:65532:") {
		t.Errorf("/etc/passwd has no user 65532:\n%s", files["etc/passwd"])
	}
	bin := filepath.Join(t.TempDir(), "hivekeeper")
	if err := os.WriteFile(bin, files["hivekeeper"], 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("the image's binary --version: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != version {
		t.Errorf("the image's binary says version %q, its label %q", got, version)
	}
	plugin := filepath.Join(t.TempDir(), "kubectl-hivekeeper")
	if err := os.WriteFile(plugin, files["kubectl-hivekeeper"], 0o755); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(plugin, "version", "--client").CombinedOutput()
	if err != nil {
		t.Fatalf("the image's kubectl-hivekeeper version --client: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != version {
		t.Errorf("the image's kubectl plugin says version %q, its label %q", got, version)
	}
}

// extract returns the regular files of the image's flattened filesystem
// by path (without the leading slash).
func extract(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[strings.TrimPrefix(h.Name, "/")] = b
		}
	}
}
