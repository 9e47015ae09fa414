// Package release runs the release pipeline (hack/release, `make
// release`) for a made-up version, as a dry run, and checks what it
// writes: the image index holds both platforms and their binaries say
// the version, the host's plugin archive runs `version` with it, the krew
// manifest's checksums are the archives', SHA256SUMS holds, and the
// packaged chart's version, appVersion and default image tag are the
// release's.
//
// To keep its time modest the test builds the plugin for linux/amd64 and
// linux/arm64 only (the image needs both anyway) and the host's when it
// is another; `make release` builds all six platforms from the same code.
// The SBOM is checked when $HIVEKEEPER_RELEASE_SBOM is set, as syft takes
// minutes to build once.
package release

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"sigs.k8s.io/yaml"
)

const (
	version   = "9.8.7-rc.1"
	imageRepo = "ghcr.io/hivekeeper/hivekeeper"
)

func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries for four platforms")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	host := runtime.GOOS + "/" + runtime.GOARCH
	platforms := []string{"linux/amd64", "linux/arm64"}
	if !slices.Contains(platforms, host) {
		platforms = append(platforms, host)
	}
	sbom := os.Getenv("HIVEKEEPER_RELEASE_SBOM") != ""
	dist := filepath.Join(t.TempDir(), "dist")
	cmd := exec.Command("go", "run", "./hack/release", "-version", "v"+version, "-out", dist,
		"-plugin-platforms", strings.Join(platforms, ","), "-sbom="+boolString(sbom))
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/release: %v\n%s", err, out)
	}
	t.Logf("%s", out)

	t.Run("image", func(t *testing.T) { checkImage(t, dist) })
	t.Run("plugin", func(t *testing.T) { checkPlugin(t, dist, host) })
	t.Run("krew", func(t *testing.T) { checkKrew(t, dist, platforms) })
	t.Run("sums", func(t *testing.T) { checkSums(t, dist, sbom) })
	t.Run("chart", func(t *testing.T) { checkChart(t, root, dist) })
}

// checkImage: the layout holds one index tagged with the version, with
// linux/amd64 and linux/arm64 images labelled with it; the host's
// architecture's controller says it; the provenance names the index.
func checkImage(t *testing.T, dist string) {
	p, err := layout.FromPath(filepath.Join(dist, "image"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
		t.Fatalf("the layout holds %+v, want one index tagged %s", tm.Manifests, version)
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatalf("the layout's entry is not an index: %v", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		got = append(got, d.Platform.String())
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if l := cf.Config.Labels["org.opencontainers.image.version"]; l != version || cf.OS+"/"+cf.Architecture != d.Platform.String() {
			t.Errorf("%s: version label %q, config platform %s/%s", d.Platform, l, cf.OS, cf.Architecture)
		}
		if runtime.GOOS == "linux" && d.Platform.Architecture == runtime.GOARCH {
			files := extract(t, img)
			for _, f := range []struct{ file, arg string }{{"hivekeeper", "--version"}, {"kubectl-hivekeeper", "version --client"}} {
				if got := runBinary(t, files[f.file], strings.Fields(f.arg)...); got != version {
					t.Errorf("the image's %s %s says %q", f.file, f.arg, got)
				}
			}
		}
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(got, want) {
		t.Errorf("the index's platforms are %v, want %v", got, want)
	}
	var prov struct {
		Subject []struct {
			Name   string            `json:"name"`
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
	}
	readJSON(t, filepath.Join(dist, "provenance.json"), &prov)
	if len(prov.Subject) != 1 || prov.Subject[0].Name != imageRepo || prov.Subject[0].Digest["sha256"] != tm.Manifests[0].Digest.Hex {
		t.Errorf("provenance subject %+v, want %s at %s", prov.Subject, imageRepo, tm.Manifests[0].Digest)
	}
}

// checkPlugin: the host's archive holds the LICENSE and the plugin, which
// says the version.
func checkPlugin(t *testing.T, dist, host string) {
	files := untar(t, filepath.Join(dist, "kubectl-hivekeeper_"+version+"_"+strings.ReplaceAll(host, "/", "_")+".tar.gz"))
	if len(files["LICENSE"]) == 0 {
		t.Error("the archive has no LICENSE")
	}
	bin := "kubectl-hivekeeper"
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if got := runBinary(t, files[bin], "version", "--client"); got != version {
		t.Errorf("kubectl-hivekeeper version --client says %q, want %q", got, version)
	}
}

// checkKrew: one platform per archive, each URI the release's download of
// an archive written, its sha256 that archive's.
func checkKrew(t *testing.T, dist string, platforms []string) {
	b, err := os.ReadFile(filepath.Join(dist, "hivekeeper.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Metadata struct{ Name string }
		Spec     struct {
			Version   string
			Platforms []struct {
				Selector struct{ MatchLabels map[string]string } `json:"selector"`
				URI      string                                  `json:"uri"`
				SHA256   string                                  `json:"sha256"`
				Bin      string                                  `json:"bin"`
			}
		}
	}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Metadata.Name != "hivekeeper" || m.Spec.Version != "v"+version || len(m.Spec.Platforms) != len(platforms) {
		t.Fatalf("manifest: name %q, version %q, %d platforms (want %d)", m.Metadata.Name, m.Spec.Version, len(m.Spec.Platforms), len(platforms))
	}
	for i, p := range m.Spec.Platforms {
		if got := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]; got != platforms[i] {
			t.Errorf("platform %d is %s, want %s", i, got, platforms[i])
		}
		prefix := "https://github.com/hivekeeper/hivekeeper/releases/download/v" + version + "/"
		if !strings.HasPrefix(p.URI, prefix) {
			t.Errorf("uri %s is not under %s", p.URI, prefix)
		}
		if sum := sha256File(t, filepath.Join(dist, path.Base(p.URI))); sum != p.SHA256 {
			t.Errorf("%s: manifest sha256 %s, archive's %s", path.Base(p.URI), p.SHA256, sum)
		}
	}
}

// checkSums: SHA256SUMS names the archives, the krew manifest, the
// provenance, the chart (and the SBOM), each with its sum.
func checkSums(t *testing.T, dist string, sbom bool) {
	f, err := os.Open(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		names = append(names, name)
		if got := sha256File(t, filepath.Join(dist, name)); got != sum {
			t.Errorf("%s: SHA256SUMS says %s, file's %s", name, sum, got)
		}
	}
	for _, want := range []string{"hivekeeper.yaml", "provenance.json", "hivekeeper-" + version + ".tgz"} {
		if !slices.Contains(names, want) {
			t.Errorf("SHA256SUMS lacks %s: %v", want, names)
		}
	}
	if sbom {
		name := "hivekeeper_" + version + "_image.spdx.json"
		var doc struct {
			SPDXVersion string `json:"spdxVersion"`
			Packages    []struct {
				Name string `json:"name"`
			} `json:"packages"`
		}
		readJSON(t, filepath.Join(dist, name), &doc)
		if !slices.Contains(names, name) || doc.SPDXVersion == "" || !slices.ContainsFunc(doc.Packages, func(p struct {
			Name string `json:"name"`
		}) bool {
			return p.Name == "k8s.io/client-go"
		}) {
			t.Errorf("SBOM %s: %s, %d packages, none k8s.io/client-go", name, doc.SPDXVersion, len(doc.Packages))
		}
	}
}

// checkChart: the packaged chart's version and appVersion are the
// release's, and helm renders its default image as the release's image.
func checkChart(t *testing.T, root, dist string) {
	tgz := filepath.Join(dist, "hivekeeper-"+version+".tgz")
	files := untar(t, tgz)
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(files["hivekeeper/Chart.yaml"], &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Version != version || chart.AppVersion != version {
		t.Errorf("chart version %q, appVersion %q, want %q", chart.Version, chart.AppVersion, version)
	}
	helm, err := exec.Command(filepath.Join(root, "hack/helm.sh")).Output()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(strings.TrimSpace(string(helm)), "template", "hivekeeper", tgz).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	if want := "image: " + imageRepo + ":" + version + "\n"; !strings.Contains(string(out), want) {
		t.Errorf("the chart's Deployment does not run %q", strings.TrimSpace(want))
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func readJSON(t *testing.T, p string, v any) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
}

// runBinary writes b to a file, runs it with args and returns its
// trimmed output.
func runBinary(t *testing.T, b []byte, args ...string) string {
	t.Helper()
	if len(b) == 0 {
		t.Fatal("no such binary")
	}
	p := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(p, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// untar reads a tar.gz's regular files by name.
func untar(t *testing.T, p string) map[string][]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return readTar(t, tar.NewReader(gz))
}

// extract reads the regular files of an image's flattened filesystem.
func extract(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	return readTar(t, tar.NewReader(rc))
}

func readTar(t *testing.T, tr *tar.Reader) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
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
