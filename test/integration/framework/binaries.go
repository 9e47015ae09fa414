package framework

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// BinariesEnv names the folder holding kube-apiserver and etcd. `make test`
// sets it from hack/test-binaries.sh.
const BinariesEnv = "HIVEKEEPER_TEST_BINARIES"

const modulePath = "github.com/hivekeeper/hivekeeper"

// RepoRoot returns the root of the hivekeeper checkout by walking up from the
// working directory to the go.mod of the module. `go test` runs each package
// in its own folder, so a relative path would differ per package.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if bytes.HasPrefix(bytes.TrimSpace(b), []byte("module "+modulePath)) {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// FindBinaries returns the folder with kube-apiserver and etcd (and, once
// built, the rest of the control plane Options.Cluster runs): $BinariesEnv
// when set, else the folder hack/test-binaries.sh prints. The script is only
// run when its cache already holds every binary, because building them takes
// minutes and a test run must never start that silently; the error then says
// how to build them.
func FindBinaries() (string, error) {
	if dir := os.Getenv(BinariesEnv); dir != "" {
		if err := checkBinaries(dir, apiServerBinaries...); err != nil {
			return "", fmt.Errorf("$%s=%s: %w", BinariesEnv, dir, err)
		}
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	expected, err := cachedBinariesDir(root)
	if err != nil {
		return "", err
	}
	// Every binary the script builds, so that running it cannot start a
	// build.
	if err := checkBinaries(expected, append(apiServerBinaries, clusterBinaries...)...); err != nil {
		return "", fmt.Errorf("%w; run `make test-binaries` (a one-time build of several minutes) or set $%s", err, BinariesEnv)
	}
	out, err := exec.Command(filepath.Join(root, "hack", "test-binaries.sh")).Output()
	if err != nil {
		return "", fmt.Errorf("hack/test-binaries.sh: %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if err := checkBinaries(dir, apiServerBinaries...); err != nil {
		return "", fmt.Errorf("hack/test-binaries.sh printed %q: %w", dir, err)
	}
	return dir, nil
}

// cachedBinariesDir mirrors the folder layout of hack/test-binaries.sh
// (<cache>/k8s/<kube>-etcd-<etcd>) so FindBinaries can tell whether running
// the script would be instant.
func cachedBinariesDir(root string) (string, error) {
	vars, err := readVersions(root)
	if err != nil {
		return "", err
	}
	if vars["KUBE_VERSION"] == "" || vars["ETCD_VERSION"] == "" {
		return "", errors.New("hack/versions.env lacks KUBE_VERSION or ETCD_VERSION")
	}
	cache := os.Getenv("HIVEKEEPER_BIN_CACHE")
	if cache == "" {
		// $XDG_CACHE_HOME or ~/.cache, as hack/test-binaries.sh uses.
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(dir, "hivekeeper")
	}
	return filepath.Join(cache, "k8s", vars["KUBE_VERSION"]+"-etcd-"+vars["ETCD_VERSION"]), nil
}

// readVersions reads the pins of hack/versions.env (NAME=value lines).
func readVersions(root string) (map[string]string, error) {
	f, err := os.Open(filepath.Join(root, "hack", "versions.env"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			vars[k] = strings.Trim(v, `"'`)
		}
	}
	return vars, sc.Err()
}

// Pin returns the value hack/versions.env pins for name (e.g.
// TOOLHIVE_GOTOOLCHAIN).
func Pin(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	vars, err := readVersions(root)
	if err != nil {
		return "", err
	}
	if vars[name] == "" {
		return "", fmt.Errorf("hack/versions.env does not pin %s", name)
	}
	return vars[name], nil
}

// ToolHive releases of hack/versions.env, the names ToolHiveSource takes.
const (
	// ToolHiveAPIRelease is the release whose API (CRDs, examples) hivekeeper
	// serves.
	ToolHiveAPIRelease = "TOOLHIVE_API_VERSION"
	// ToolHiveRuntimeRelease is the release whose binaries the conformance,
	// differential and status suites run, and whose output their recorded
	// expectations are.
	ToolHiveRuntimeRelease = "TOOLHIVE_SUITES_VERSION"
	// ToolHiveNewestRelease is the release users run, the newest hivekeeper
	// writes for.
	ToolHiveNewestRelease = "TOOLHIVE_VERSION"
)

// ToolHiveSourceAt returns the folder of ToolHive's source at version in
// the Go module cache, downloading it first if needed.
func ToolHiveSourceAt(version string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "hack", "toolhive-source.sh"), version)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/toolhive-source.sh %s: %w", version, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// ToolHiveSource returns the version pinned as release (ToolHiveAPIRelease
// or ToolHiveRuntimeRelease) and the folder of that release's source in the
// Go module cache, downloading it first if needed (hack/toolhive-source.sh).
// Tests read ToolHive's CRD YAML and examples from there.
func ToolHiveSource(release string) (version, dir string, err error) {
	root, err := RepoRoot()
	if err != nil {
		return "", "", err
	}
	vars, err := readVersions(root)
	if err != nil {
		return "", "", err
	}
	if version = vars[release]; version == "" {
		return "", "", fmt.Errorf("hack/versions.env does not pin %s", release)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "toolhive-source.sh"), version)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("hack/toolhive-source.sh %s: %w", version, err)
	}
	return version, strings.TrimSpace(string(out)), nil
}

// GoModuleSource returns the folder of module at version in the Go module
// cache, downloaded by hack/toolhive-source.sh with ToolHive's toolchain:
// the modules ToolHive's types come from besides its own.
func GoModuleSource(module, version string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "hack", "toolhive-source.sh"), version, module)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/toolhive-source.sh %s %s: %w", version, module, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// apiServerBinaries are what Start always runs.
var apiServerBinaries = []string{"kube-apiserver", "etcd"}

// checkBinaries fails unless every one of names is an executable in dir.
func checkBinaries(dir string, names ...string) error {
	for _, name := range names {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("%s not found in %s", name, dir)
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s in %s is not executable", name, dir)
		}
	}
	return nil
}

// BuildOnce returns a function that builds the command pkg of this
// repository (e.g. "./cmd/controller") as name in the package's API
// server directory the first time it is called, and returns its path; it
// fails the test when the build fails, and skips it, as Get does, when
// the package has no API server.
func BuildOnce(pkg, name string) func(t *testing.T) string {
	var (
		once sync.Once
		path string
		err  error
	)
	return func(t *testing.T) string {
		t.Helper()
		env := Get(t)
		once.Do(func() {
			var root string
			if root, err = RepoRoot(); err != nil {
				return
			}
			path = filepath.Join(env.Server.Dir, name)
			cmd := exec.Command("go", "build", "-o", path, pkg)
			cmd.Dir = root
			if out, berr := cmd.CombinedOutput(); berr != nil {
				err = fmt.Errorf("go build %s: %v\n%s", pkg, berr, out)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
}
