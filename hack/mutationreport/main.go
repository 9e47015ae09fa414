// Command mutationreport turns the JSON results of gremlins runs (one file
// per package, gremlins unleash -o) into a Markdown table of killed,
// survived and not-covered mutants per package, followed by each
// survivor's position, so that a survivor can be judged (killed by a new
// test, or explained as equivalent) without rerunning the tool. With
// Each argument is DIR=FILE: the directory gremlins was run on (its file
// names are relative to it) and the JSON it wrote. With
// -floor it instead checks the efficacy of each result against the floor
// file (lines "package efficacy") and exits 1 when one is lower.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
)

// result is the part of gremlins' JSON output this command reads.
type result struct {
	Files []struct {
		FileName  string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
	Elapsed float64 `json:"elapsed_time"`
}

type pkgStats struct {
	killed, lived, notCovered, timedOut, notViable int
	survivors                                      []string
	elapsed                                        float64
}

// efficacy is gremlins' test efficacy: killed over killed and lived.
func (s *pkgStats) efficacy() float64 {
	if s.killed+s.lived == 0 {
		return 100
	}
	return 100 * float64(s.killed) / float64(s.killed+s.lived)
}

func main() {
	title := flag.String("title", "Mutation testing", "the report's heading")
	intro := flag.String("intro", "", "a file whose text goes under the heading")
	floor := flag.String("floor", "", "check efficacy against this floor file instead of writing a report")
	flag.Parse()
	stats := map[string]*pkgStats{}
	for _, arg := range flag.Args() {
		dir, f, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "%s: want DIR=FILE\n", arg)
			os.Exit(2)
		}
		if err := read(path.Clean(dir), f, stats); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if *floor != "" {
		os.Exit(check(*floor, stats, os.Stdout))
	}
	if err := report(os.Stdout, *title, *intro, stats); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// read adds one gremlins result file to stats. A file's package is its
// directory, under dir: gremlins names files relative to the directory
// it was run on.
func read(dir, name string, stats map[string]*pkgStats) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	var r result
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	seen := map[*pkgStats]bool{}
	for _, f := range r.Files {
		pkg := path.Join(dir, path.Dir(f.FileName))
		s := stats[pkg]
		if s == nil {
			s = &pkgStats{}
			stats[pkg] = s
		}
		if !seen[s] {
			seen[s] = true
			s.elapsed += r.Elapsed
		}
		for _, m := range f.Mutations {
			switch m.Status {
			case "KILLED":
				s.killed++
			case "LIVED":
				s.lived++
				s.survivors = append(s.survivors, fmt.Sprintf("%s:%d:%d %s", path.Base(f.FileName), m.Line, m.Column, m.Type))
			case "NOT COVERED":
				s.notCovered++
			case "TIMED OUT":
				s.timedOut++
			case "NOT VIABLE":
				s.notViable++
			}
		}
	}
	return nil
}

func sortedKeys(stats map[string]*pkgStats) []string {
	keys := make([]string, 0, len(stats))
	for k := range stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func report(w io.Writer, title, intro string, stats map[string]*pkgStats) error {
	fmt.Fprintf(w, "# %s\n\n", title)
	if intro != "" {
		b, err := os.ReadFile(intro)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\n", strings.TrimSpace(string(b)))
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "| package | killed | survived | not covered | timed out | not viable | efficacy | run time |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, k := range sortedKeys(stats) {
		s := stats[k]
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %.2f%% | %.0fs |\n", k, s.killed, s.lived, s.notCovered, s.timedOut, s.notViable, s.efficacy(), s.elapsed)
	}
	for _, k := range sortedKeys(stats) {
		s := stats[k]
		if len(s.survivors) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n## Survivors in %s\n\n", k)
		for _, v := range s.survivors {
			fmt.Fprintf(w, "- %s\n", v)
		}
	}
	return nil
}

// check compares each package of stats named in the floor file with its
// recorded efficacy; packages without a result are not checked.
func check(floorFile string, stats map[string]*pkgStats, w io.Writer) int {
	f, err := os.Open(floorFile)
	if err != nil {
		fmt.Fprintln(w, err)
		return 2
	}
	defer f.Close()
	rc := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		want, err := strconv.ParseFloat(strings.TrimSuffix(fields[1], "%"), 64)
		if err != nil {
			fmt.Fprintf(w, "%s: bad floor %q\n", floorFile, fields[1])
			return 2
		}
		s := stats[path.Clean(fields[0])]
		if s == nil {
			continue
		}
		verdict := "ok"
		// A hundredth of a percent of slack for the rounding of the file.
		if s.efficacy() < want-0.01 {
			verdict, rc = "BELOW THE FLOOR", 1
		}
		fmt.Fprintf(w, "%s: efficacy %.2f%% (floor %.2f%%; %d killed, %d survived, %d not covered): %s\n",
			fields[0], s.efficacy(), want, s.killed, s.lived, s.notCovered, verdict)
		for _, v := range s.survivors {
			fmt.Fprintf(w, "  survivor %s\n", v)
		}
	}
	return rc
}
