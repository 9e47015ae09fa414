// Command release builds a hivekeeper release into dist/ (`make release`):
//
//   - image/: the controller image as an OCI image layout holding one
//     multi-platform index (linux/amd64 and linux/arm64), built with
//     go-containerregistry (hack/internal/ociimage), reproducible;
//   - hivekeeper_<version>_image.spdx.json: the image's SBOM, by syft;
//   - provenance.json: an in-toto SLSA v1 provenance statement of the image
//     (unsigned; the release workflow attests it with cosign);
//   - kubectl-hivekeeper_<version>_<os>_<arch>.tar.gz: the kubectl plugin
//     for linux, darwin and windows on amd64 and arm64, with the LICENSE;
//   - hivekeeper.yaml: the krew manifest of those archives, checked by
//     krew's validator;
//   - hivekeeper-<version>.tgz: the Helm chart, its version, appVersion and
//     so its default image tag the release's;
//   - SHA256SUMS of all of the above.
//
// It is a dry run unless -push names the image's repository: then the
// index is pushed there and the chart to -chart-repository (helm push).
// Every file carries the commit's time (SOURCE_DATE_EPOCH when set), so
// the same commit gives the same image digest and archives.
//
//	go run ./hack/release -version 0.1.0
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	"github.com/hivekeeper/hivekeeper/hack/internal/ociimage"
)

// The release's fixed facts.
const (
	// Repository is the project's repository on its forge: the krew
	// manifest's homepage and the base of its download URIs.
	Repository = "https://github.com/hivekeeper/hivekeeper"
	// ImageRepository is where the chart's default image lives; a pushed
	// release goes there.
	ImageRepository = "ghcr.io/hivekeeper/hivekeeper"
	// Plugin is the kubectl plugin's binary, and PluginName its krew name.
	Plugin     = "kubectl-hivekeeper"
	PluginName = "hivekeeper"
	// Chart is the chart's folder.
	Chart = "deploy/charts/hivekeeper"
	// Sums is the checksum file.
	Sums = "SHA256SUMS"
	// ImageDir is the OCI layout of the image.
	ImageDir = "image"
	// KrewManifest is the krew manifest, named as krew's index names it.
	KrewManifest = PluginName + ".yaml"
	// Provenance is the image's provenance statement.
	Provenance = "provenance.json"
)

// DefaultPluginPlatforms are the plugin's platforms, DefaultImagePlatforms
// the image's.
var (
	DefaultPluginPlatforms = "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64,windows/arm64"
	DefaultImagePlatforms  = "linux/amd64,linux/arm64"
)

// semver is a release version without its leading v (semver.org's form).
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

type config struct {
	version, revision, out     string
	created                    time.Time
	pluginPlatforms            []string
	imagePlatforms             []string
	sbom, validateKrew         bool
	push, chartRepository      string
	root, helm, syft, krewTool string
}

func main() {
	var (
		c         config
		created   = flag.Int64("created", -1, "the time of every file, in seconds since the epoch (default: $SOURCE_DATE_EPOCH, else the commit's time)")
		pluginPl  = flag.String("plugin-platforms", DefaultPluginPlatforms, "the kubectl plugin's os/arch list")
		imagePl   = flag.String("image-platforms", DefaultImagePlatforms, "the image's linux/arch list")
		chartRepo = flag.String("chart-repository", "oci://ghcr.io/hivekeeper/charts", "where -push pushes the chart (helm push)")
	)
	flag.StringVar(&c.version, "version", os.Getenv("VERSION"), "the release, semver without a leading v (a tag v0.1.0 is the release 0.1.0); default $VERSION")
	flag.StringVar(&c.revision, "revision", "", "the source commit (default: git rev-parse HEAD)")
	flag.StringVar(&c.out, "out", "dist", "the output folder, replaced")
	flag.BoolVar(&c.sbom, "sbom", true, "write the image's SBOM with syft")
	flag.BoolVar(&c.validateKrew, "validate-krew", true, "check the krew manifest with krew's validator")
	flag.StringVar(&c.push, "push", "", "push the image to this repository (it must be the chart's default, "+ImageRepository+") and the chart to -chart-repository; empty: a dry run")
	flag.Parse()
	c.chartRepository = *chartRepo
	c.pluginPlatforms = strings.Split(*pluginPl, ",")
	c.imagePlatforms = strings.Split(*imagePl, ",")
	if err := c.setup(*created); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(2)
	}
	if err := c.run(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// setup checks the flags and fills in what they leave to the repository.
func (c *config) setup(created int64) error {
	c.version = strings.TrimPrefix(c.version, "v")
	if !semver.MatchString(c.version) {
		return fmt.Errorf("-version %q is not a semantic version such as 0.1.0", c.version)
	}
	for _, p := range c.imagePlatforms {
		if !strings.HasPrefix(p, "linux/") {
			return fmt.Errorf("-image-platforms: %s is not linux", p)
		}
	}
	if c.push != "" && c.push != ImageRepository {
		return fmt.Errorf("-push %s: the chart's default image is %s; a release pushed elsewhere would not be the chart's", c.push, ImageRepository)
	}
	root, err := gitOutput("", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	c.root = root
	if dirty, err := gitOutput(root, "status", "--porcelain", "--untracked-files=no"); err != nil {
		return err
	} else if dirty != "" {
		if c.push != "" {
			return fmt.Errorf("the work tree has uncommitted changes: a published release is a commit")
		}
		fmt.Fprintln(os.Stderr, "release: the work tree has uncommitted changes; the revision label and the provenance name HEAD")
	}
	if c.revision == "" {
		if c.revision, err = gitOutput(root, "rev-parse", "HEAD"); err != nil {
			return err
		}
	}
	if created < 0 {
		if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
			if created, err = strconv.ParseInt(s, 10, 64); err != nil {
				return fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
			}
		} else {
			s, err := gitOutput(root, "log", "-1", "--format=%ct", c.revision)
			if err != nil {
				return err
			}
			if created, err = strconv.ParseInt(s, 10, 64); err != nil {
				return err
			}
		}
	}
	c.created = time.Unix(created, 0).UTC()
	if !filepath.IsAbs(c.out) {
		wd, _ := os.Getwd()
		c.out = filepath.Join(wd, c.out)
	}
	return nil
}

func (c *config) run() error {
	if err := os.RemoveAll(c.out); err != nil {
		return err
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	bin := filepath.Join(c.out, ".build")
	defer os.RemoveAll(bin)

	// The plugin, for every platform; the linux ones also go into the
	// image.
	var archives []string
	plugins := map[string][]byte{}
	for _, p := range c.pluginPlatforms {
		b, err := c.goBuild(bin, p, "./cmd/kubectl-hivekeeper", Plugin)
		if err != nil {
			return err
		}
		plugins[p] = b
		a, err := c.archive(p, b)
		if err != nil {
			return err
		}
		archives = append(archives, a)
	}
	if err := c.krewManifest(archives); err != nil {
		return err
	}

	// The image.
	idx, err := c.image(bin, plugins)
	if err != nil {
		return err
	}
	files := slices.Clone(archives)
	files = append(files, KrewManifest, Provenance)
	if c.sbom {
		s, err := c.writeSBOM()
		if err != nil {
			return err
		}
		files = append(files, s)
	}
	chart, err := c.packageChart()
	if err != nil {
		return err
	}
	files = append(files, chart)
	if err := c.sums(files); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("release %s in %s\n  image %s:%s %s (%s)\n  chart %s\n  plugin %d archives, %s, %s\n",
		c.version, c.out, ImageRepository, c.version, digest, strings.Join(c.imagePlatforms, ", "), chart, len(archives), KrewManifest, Sums)
	if c.push == "" {
		fmt.Println("dry run: nothing pushed (make release PUSH=1 pushes)")
		return nil
	}
	return c.publish(idx, chart)
}

// goBuild cross-compiles pkg for platform into dir and returns the binary.
func (c *config) goBuild(dir, platform, pkg, name string) ([]byte, error) {
	goos, goarch, _ := strings.Cut(platform, "/")
	if goos == "windows" {
		name += ".exe"
	}
	out := filepath.Join(dir, goos+"_"+goarch, name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+c.version, "-o", out, pkg)
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=-mod=readonly -buildvcs=false")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	fmt.Fprintf(os.Stderr, "== go build %s for %s\n", pkg, platform)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for %s: %w", pkg, platform, err)
	}
	return os.ReadFile(out)
}

// archiveName is the plugin's archive for platform.
func (c *config) archiveName(platform string) string {
	return fmt.Sprintf("%s_%s_%s.tar.gz", Plugin, c.version, strings.ReplaceAll(platform, "/", "_"))
}

// archive writes the plugin's archive for platform: the binary and the
// LICENSE, in a reproducible tar.gz.
func (c *config) archive(platform string, binary []byte) (string, error) {
	license, err := os.ReadFile(filepath.Join(c.root, "LICENSE"))
	if err != nil {
		return "", err
	}
	name := c.archiveName(platform)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf) // no name, no time in the header
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"LICENSE", 0o644, license}, {pluginBin(platform), 0o755, binary}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: c.created,
			Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	return name, os.WriteFile(filepath.Join(c.out, name), buf.Bytes(), 0o644)
}

// pluginBin is the plugin's file name on platform.
func pluginBin(platform string) string {
	if strings.HasPrefix(platform, "windows/") {
		return Plugin + ".exe"
	}
	return Plugin
}

// KrewPlugin is krew's manifest (krew.googlecontainertools.github.com/v1alpha2).
type KrewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string         `json:"version"`
		Homepage         string         `json:"homepage"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description"`
		Platforms        []KrewPlatform `json:"platforms"`
	} `json:"spec"`
}

// KrewPlatform is one archive of a krew manifest.
type KrewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string `json:"uri"`
	SHA256 string `json:"sha256"`
	Bin    string `json:"bin"`
}

// krewManifest writes the krew manifest of the archives, their URIs the
// forge's release downloads, and checks it with krew's validator.
func (c *config) krewManifest(archives []string) error {
	var m KrewPlugin
	m.APIVersion, m.Kind = "krew.googlecontainertools.github.com/v1alpha2", "Plugin"
	m.Metadata.Name = PluginName
	m.Spec.Version = "v" + c.version
	m.Spec.Homepage = Repository
	m.Spec.ShortDescription = "Plan, check and make a switch from ToolHive's operator to hivekeeper"
	m.Spec.Description = "kubectl hivekeeper looks at a cluster that runs ToolHive's MCP API (toolhive.stacklok.dev)\n" +
		"and says what a switch from ToolHive's operator to hivekeeper would do to it: preflight\n" +
		"predicts the restarts without changing anything, switch makes the switch checking each\n" +
		"step, switch --back undoes it, and version reports the plugin's and the controller's versions.\n"
	for i, p := range c.pluginPlatforms {
		sum, err := fileSHA256(filepath.Join(c.out, archives[i]))
		if err != nil {
			return err
		}
		goos, goarch, _ := strings.Cut(p, "/")
		var kp KrewPlatform
		kp.Selector.MatchLabels = map[string]string{"os": goos, "arch": goarch}
		kp.URI = fmt.Sprintf("%s/releases/download/v%s/%s", Repository, c.version, archives[i])
		kp.SHA256, kp.Bin = sum, pluginBin(p)
		m.Spec.Platforms = append(m.Spec.Platforms, kp)
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	path := filepath.Join(c.out, KrewManifest)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	if !c.validateKrew {
		return nil
	}
	tool, err := c.tool("validate-krew-manifest")
	if err != nil {
		return err
	}
	// The install check downloads the URIs, which exist once the release
	// is published; the manifest's form is what is checked here.
	cmd := exec.Command(tool, "-manifest", path, "-skip-install")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("krew's validator refuses %s: %v\n%s", KrewManifest, err, out)
	}
	return nil
}

// image builds the controller for each image platform, assembles the
// index with the plugin beside it, writes it as an OCI layout and its
// provenance statement.
func (c *config) image(bin string, plugins map[string][]byte) (v1.ImageIndex, error) {
	o := ociimage.Options{Version: c.version, Revision: c.revision, Created: c.created}
	var err error
	if o.CABundle, o.CASource, err = ociimage.MozillaRoots(); err != nil {
		return nil, err
	}
	var arches []string
	var images []v1.Image
	for _, p := range c.imagePlatforms {
		controller, err := c.goBuild(bin, p, "./cmd/controller", "hivekeeper")
		if err != nil {
			return nil, err
		}
		plugin, ok := plugins[p]
		if !ok {
			if plugin, err = c.goBuild(bin, p, "./cmd/kubectl-hivekeeper", Plugin); err != nil {
				return nil, err
			}
		}
		_, arch, _ := strings.Cut(p, "/")
		img, err := ociimage.Image(o, arch, controller, plugin)
		if err != nil {
			return nil, err
		}
		arches, images = append(arches, arch), append(images, img)
	}
	idx, err := ociimage.Index(o, arches, images)
	if err != nil {
		return nil, err
	}
	if err := ociimage.WriteLayout(filepath.Join(c.out, ImageDir), c.version, nil, idx); err != nil {
		return nil, err
	}
	return idx, c.provenance(idx)
}

// provenance writes an in-toto statement with a SLSA v1 provenance
// predicate for the image index: what was built (the commit, the
// version), how (this command, the Go toolchain), from what (the
// repository at the commit, go.sum).
func (c *config) provenance(idx v1.ImageIndex) error {
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	gosum, err := fileSHA256(filepath.Join(c.root, "go.sum"))
	if err != nil {
		return err
	}
	builder := "local: make release"
	if s := os.Getenv("GITHUB_SERVER_URL"); s != "" {
		builder = s + "/" + os.Getenv("GITHUB_REPOSITORY") + "/.github/workflows/release.yml"
	}
	st := map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": ImageRepository, "digest": map[string]string{"sha256": digest.Hex}}},
		"predicateType": "https://slsa.dev/provenance/v1",
		"predicate": map[string]any{
			"buildDefinition": map[string]any{
				"buildType": Repository + "/hack/release",
				"externalParameters": map[string]any{
					"version": c.version, "platforms": c.imagePlatforms, "sourceDateEpoch": c.created.Unix(),
				},
				"internalParameters": map[string]any{"goVersion": runtime.Version()},
				"resolvedDependencies": []any{
					map[string]any{"uri": "git+" + Repository, "digest": map[string]string{"gitCommit": c.revision}},
					map[string]any{"uri": "go.sum", "digest": map[string]string{"sha256": gosum}},
				},
			},
			"runDetails": map[string]any{"builder": map[string]string{"id": builder}},
		},
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.out, Provenance), append(b, '\n'), 0o644)
}

// writeSBOM writes the image's SBOM (SPDX JSON) with syft, which reads
// the Go modules compiled into the binaries; the first image platform's
// image is scanned (every platform's binaries are built from the same
// modules).
func (c *config) writeSBOM() (string, error) {
	syft, err := c.tool("syft")
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("hivekeeper_%s_image.spdx.json", c.version)
	cmd := exec.Command(syft, "scan", "oci-dir:"+filepath.Join(c.out, ImageDir), "--platform", c.imagePlatforms[0],
		"--source-name", ImageRepository, "--source-version", c.version, "-q", "-o", "spdx-json="+filepath.Join(c.out, name))
	cmd.Env = append(os.Environ(), "SYFT_CHECK_FOR_APP_UPDATE=false", "SOURCE_DATE_EPOCH="+strconv.FormatInt(c.created.Unix(), 10))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("syft: %v\n%s", err, out)
	}
	return name, nil
}

// packageChart packages the chart with the release's version and
// appVersion, which is the default image's tag, after checking that the
// chart's default image repository is the release's.
func (c *config) packageChart() (string, error) {
	values, err := os.ReadFile(filepath.Join(c.root, Chart, "values.yaml"))
	if err != nil {
		return "", err
	}
	var v struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
	}
	if err := yaml.Unmarshal(values, &v); err != nil {
		return "", err
	}
	if v.Image.Repository != ImageRepository || v.Image.Tag != "" {
		return "", fmt.Errorf("the chart's default image is %s:%s; a release needs %s with the tag left to appVersion", v.Image.Repository, v.Image.Tag, ImageRepository)
	}
	helm, err := c.helmPath()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(helm, "package", filepath.Join(c.root, Chart), "--version", c.version, "--app-version", c.version, "-d", c.out)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("helm package: %v\n%s", err, out)
	}
	return fmt.Sprintf("hivekeeper-%s.tgz", c.version), nil
}

// publish pushes the index and the chart.
func (c *config) publish(idx v1.ImageIndex, chart string) error {
	tag, err := name.NewTag(c.push + ":" + c.version)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(tag, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing %s: %w", tag, err)
	}
	digest, _ := idx.Digest()
	fmt.Printf("pushed %s@%s\n", tag, digest)
	helm, err := c.helmPath()
	if err != nil {
		return err
	}
	cmd := exec.Command(helm, "push", filepath.Join(c.out, chart), c.chartRepository)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// sums writes SHA256SUMS of files, in name order, as sha256sum -c reads it.
func (c *config) sums(files []string) error {
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		sum, err := fileSHA256(filepath.Join(c.out, f))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, f)
	}
	return os.WriteFile(filepath.Join(c.out, Sums), []byte(b.String()), 0o644)
}

func (c *config) helmPath() (string, error) {
	if c.helm == "" {
		out, err := exec.Command(filepath.Join(c.root, "hack/helm.sh")).Output()
		if err != nil {
			return "", fmt.Errorf("hack/helm.sh: %w", err)
		}
		c.helm = strings.TrimSpace(string(out))
	}
	return c.helm, nil
}

// tool is the path of a release tool hack/tool.sh builds once.
func (c *config) tool(name string) (string, error) {
	cmd := exec.Command(filepath.Join(c.root, "hack/tool.sh"), name)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/tool.sh %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func fileSHA256(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func gitOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
