// Command sitelinks checks a built documentation site (make docs-site):
// every link from one of its pages to another names a page the site has
// and, with a #fragment, an id on that page. MkDocs checks that linked
// pages exist; this checks the anchors too, as the pages were rendered.
//
//	go run ./hack/sitelinks bin/site
package main

import (
	"fmt"
	"html"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

var (
	hrefRE = regexp.MustCompile(`href="([^"]*)"`)
	idRE   = regexp.MustCompile(`\sid="([^"]+)"`)
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sitelinks <site directory>")
		os.Exit(2)
	}
	problems, pages, err := check(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sitelinks:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("sitelinks: %d pages, every link and anchor resolves\n", pages)
}

// check returns each broken link of the site at dir as "<page>: <href>:
// <why>", and the number of pages read.
func check(dir string) ([]string, int, error) {
	pages := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".html") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		pages[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	ids := map[string]map[string]bool{}
	for p, text := range pages {
		ids[p] = map[string]bool{}
		for _, m := range idRE.FindAllStringSubmatch(text, -1) {
			ids[p][html.UnescapeString(m[1])] = true
		}
	}
	var problems []string
	for p, text := range pages {
		if p == "404.html" {
			continue // its links are relative to wherever it is served
		}
		for _, m := range hrefRE.FindAllStringSubmatch(text, -1) {
			href := html.UnescapeString(m[1])
			u, err := url.Parse(href)
			if err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(href, "//") {
				continue // another site
			}
			target := p
			if u.Path != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(p), u.Path))
				if strings.HasSuffix(u.Path, "/") {
					target += "/index.html"
				}
			}
			if !strings.HasSuffix(target, ".html") {
				if _, err := os.Stat(filepath.Join(dir, target)); err != nil {
					problems = append(problems, fmt.Sprintf("%s: %s: no such file", p, href))
				}
				continue
			}
			if _, ok := pages[target]; !ok {
				problems = append(problems, fmt.Sprintf("%s: %s: no such page", p, href))
				continue
			}
			if u.Fragment != "" && !ids[target][u.Fragment] {
				problems = append(problems, fmt.Sprintf("%s: %s: %s has no id %q", p, href, target, u.Fragment))
			}
		}
	}
	sort.Strings(problems)
	return problems, len(pages), nil
}
