package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func testConfig(t *testing.T) *config {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return &config{version: "1.2.3-rc.1", root: root, out: t.TempDir(), created: time.Unix(1700000000, 0).UTC(),
		pluginPlatforms: strings.Split(DefaultPluginPlatforms, ",")}
}

// The krew manifest names every one of the six platforms with its
// archive's checksum, the release's download URI and the binary's name
// (.exe on windows), and krew's validator accepts it.
func TestKrewManifest(t *testing.T) {
	c := testConfig(t)
	c.validateKrew = !testing.Short()
	var archives []string
	for _, p := range c.pluginPlatforms {
		a, err := c.archive(p, []byte("plugin for "+p))
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, a)
	}
	if err := c.krewManifest(archives); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(c.out, KrewManifest))
	if err != nil {
		t.Fatal(err)
	}
	var m KrewPlugin
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Metadata.Name != "hivekeeper" || m.Spec.Version != "v1.2.3-rc.1" || len(m.Spec.Platforms) != 6 {
		t.Fatalf("manifest %s %s with %d platforms", m.Metadata.Name, m.Spec.Version, len(m.Spec.Platforms))
	}
	for i, p := range m.Spec.Platforms {
		platform := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
		want := "kubectl-hivekeeper_1.2.3-rc.1_" + strings.ReplaceAll(platform, "/", "_") + ".tar.gz"
		if platform != c.pluginPlatforms[i] || p.URI != Repository+"/releases/download/v1.2.3-rc.1/"+want {
			t.Errorf("platform %d: %s at %s", i, platform, p.URI)
		}
		sum, err := fileSHA256(filepath.Join(c.out, want))
		if err != nil {
			t.Fatal(err)
		}
		if p.SHA256 != sum {
			t.Errorf("%s: sha256 %s, archive's %s", want, p.SHA256, sum)
		}
		if wantBin := map[bool]string{true: "kubectl-hivekeeper.exe", false: "kubectl-hivekeeper"}[strings.HasPrefix(platform, "windows/")]; p.Bin != wantBin {
			t.Errorf("%s: bin %s", platform, p.Bin)
		}
	}
}

// An archive is the same bytes whenever it is built.
func TestArchiveIsReproducible(t *testing.T) {
	c := testConfig(t)
	a, err := c.archive("linux/amd64", []byte("binary"))
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(filepath.Join(c.out, a))
	time.Sleep(1100 * time.Millisecond)
	if _, err := c.archive("linux/amd64", []byte("binary")); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(filepath.Join(c.out, a))
	if !bytes.Equal(first, second) {
		t.Error("two builds of the same archive differ")
	}
}

// A release version is semver; a leading v is dropped; the image must go
// to the chart's repository.
func TestSetup(t *testing.T) {
	for _, c := range []struct {
		version, push string
		ok            bool
	}{
		{"v0.1.0", "", true},
		{"0.1.0-rc.1", "", true},
		{"", "", false},
		{"0.1", "", false},
		{"latest", "", false},
		{"0.1.0", "docker.io/someone/hivekeeper", false},
		{"0.1.0", ImageRepository, true},
	} {
		cfg := &config{version: c.version, push: c.push, imagePlatforms: []string{"linux/amd64"}}
		err := cfg.setup(1700000000)
		if (err == nil) != c.ok {
			t.Errorf("version %q push %q: %v", c.version, c.push, err)
		}
		if err == nil && strings.HasPrefix(cfg.version, "v") {
			t.Errorf("version %q kept its v", cfg.version)
		}
	}
}
