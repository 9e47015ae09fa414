package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	fenceRE      = regexp.MustCompile("(?ms)^[ \t]*(```|~~~).*?^[ \t]*(```|~~~)[ \t]*$")
	inlineCodeRE = regexp.MustCompile("`[^`\n]*`")
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	headingRE    = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$`)
	anchorTagRE  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	mdLinkTextRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// slug is the anchor GitHub (and the docs site, which uses the same
// rule: pymdownx.slugs.gfm) gives a heading: lower case, every character
// but letters, digits, spaces, hyphens and underscores dropped, spaces
// made hyphens.
func slug(heading string) string {
	heading = mdLinkTextRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the anchors a Markdown file has: its headings' slugs (a
// repeated one numbered -1, -2, ...) and explicit <a id> tags.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(text, ""), -1) {
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	for _, m := range anchorTagRE.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// Every relative link in the user docs names a file the repository holds,
// and every anchor one of that file's headings: a page moved or a heading
// renamed without its links fails here.
func TestLinksAndAnchorsResolve(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "examples", "README.md"))
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := cache[path]; ok {
			return a
		}
		a := anchors(read(t, path))
		cache[path] = a
		return a
	}
	checked := 0
	for _, f := range files {
		text := inlineCodeRE.ReplaceAllString(fenceRE.ReplaceAllString(read(t, f), ""), "")
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link to %s: no such file", rel(f), target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[anchor] {
				t.Errorf("%s: link to %s: %s has no heading with that anchor", rel(f), target, rel(dest))
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the link pattern is broken")
	}
}

func rel(path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return r
}

func TestSlugIsGitHubs(t *testing.T) {
	for heading, want := range map[string]string{
		"Build and push the image":                           "build-and-push-the-image",
		"The runner's StatefulSet is not adopted or bounced": "the-runners-statefulset-is-not-adopted-or-bounced",
		"`kubectl hivekeeper version`":                       "kubectl-hivekeeper-version",
		"A — B":                                              "a--b",
		"4. Going back: `switch --back`":                     "4-going-back-switch---back",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

// Every page under docs/ is in the site's navigation (mkdocs.yml), under
// one of the four kinds a reader comes for, and the navigation names no
// page that does not exist.
func TestEveryPageIsInTheSiteNavigation(t *testing.T) {
	nav := read(t, filepath.Join(root, "mkdocs.yml"))
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*- (?:[^:\n]+: )?([a-z0-9-]+\.md)\s*$`).FindAllStringSubmatch(nav, -1) {
		listed[m[1]] = true
		if _, err := os.Stat(filepath.Join(root, "docs", m[1])); err != nil {
			t.Errorf("mkdocs.yml lists %s, which docs/ does not hold", m[1])
		}
	}
	for _, section := range []string{"Tutorial:", "How-to guides:", "Reference:", "Explanation:"} {
		if !strings.Contains(nav, "  - "+section) {
			t.Errorf("mkdocs.yml's navigation has no section %q", section)
		}
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("docs/%s is not in mkdocs.yml's navigation", filepath.Base(f))
		}
	}
}
