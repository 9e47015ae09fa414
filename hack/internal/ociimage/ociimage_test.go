package ociimage

import (
	"crypto/x509"
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The CA bundle is Mozilla's unconstrained roots, every one a certificate,
// its source the pinned module.
func TestMozillaRoots(t *testing.T) {
	pemBytes, source, err := MozillaRoots()
	if err != nil {
		t.Fatal(err)
	}
	all, constrained := 0, 0
	for r := range bundle.Roots() {
		all++
		if r.Constraint != nil {
			constrained++
		}
	}
	n := 0
	for rest := pemBytes; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != all-constrained || n < 100 {
		t.Errorf("%d roots in the bundle; the module has %d, %d of them constrained", n, all, constrained)
	}
	if !strings.HasPrefix(source, "golang.org/x/crypto/x509roots/fallback") {
		t.Errorf("source %q", source)
	}
}

// The same inputs give the same index digest, whatever the time of the
// build; the index holds one image per architecture with its platform,
// and the layout tags it with the version.
func TestIndexIsReproducible(t *testing.T) {
	build := func() v1.ImageIndex {
		o := Options{Version: "1.2.3", Revision: "abc", Created: time.Unix(1700000000, 0).UTC(), CABundle: []byte("ca"), CASource: "test"}
		var imgs []v1.Image
		for _, arch := range []string{"amd64", "arm64"} {
			img, err := Image(o, arch, []byte("controller-"+arch), []byte("plugin-"+arch))
			if err != nil {
				t.Fatal(err)
			}
			imgs = append(imgs, img)
		}
		idx, err := Index(o, []string{"amd64", "arm64"}, imgs)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	}
	a := build()
	time.Sleep(1100 * time.Millisecond)
	b := build()
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("two builds of the same inputs: %s and %s", da, db)
	}
	dir := filepath.Join(t.TempDir(), "oci")
	if err := WriteLayout(dir, "1.2.3", nil, a); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, _ := top.IndexManifest()
	if len(tm.Manifests) != 1 || tm.Manifests[0].Digest != da || tm.Manifests[0].Annotations[RefName] != "1.2.3" {
		t.Fatalf("layout index %+v", tm.Manifests)
	}
	m, _ := a.IndexManifest()
	if m.Annotations["org.opencontainers.image.version"] != "1.2.3" {
		t.Errorf("index annotations %v", m.Annotations)
	}
	var platforms []string
	for _, d := range m.Manifests {
		platforms = append(platforms, d.Platform.String())
		img, err := a.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		if cf.OS+"/"+cf.Architecture != d.Platform.String() {
			t.Errorf("image %s says %s/%s", d.Platform, cf.OS, cf.Architecture)
		}
	}
	if strings.Join(platforms, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("platforms %v", platforms)
	}
}
