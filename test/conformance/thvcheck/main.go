// Command thvcheck decodes what hivekeeper writes with ToolHive's own Go
// types at the pinned release, so the conformance suite judges
// compatibility by ToolHive's code rather than by a reading of it.
//
//	thvcheck runconfig FILE
//
// decodes FILE into ToolHive's runner.RunConfig with unknown fields
// rejected, then re-encodes the decoded value and compares it with the
// input at every level: a key the input gives a value that does not come
// back is a key ToolHive does not know (or drops), and is an error naming
// its path. On success the re-encoded RunConfig is printed on stdout, so
// the test asserts the values ToolHive actually decoded.
//
// It lives in a module of its own so that ToolHive's dependency graph
// never enters hivekeeper's.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/stacklok/toolhive/pkg/runner"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "runconfig" {
		fmt.Fprintln(os.Stderr, "usage: thvcheck runconfig FILE")
		os.Exit(2)
	}
	out, err := checkRunConfig(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}

func checkRunConfig(file string) ([]byte, error) {
	in, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var rc runner.RunConfig
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rc); err != nil {
		return nil, fmt.Errorf("strict decode into runner.RunConfig: %w", err)
	}
	out, err := json.MarshalIndent(&rc, "", "  ")
	if err != nil {
		return nil, err
	}
	var before, after any
	if err := json.Unmarshal(in, &before); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(out, &after); err != nil {
		return nil, err
	}
	var lost []string
	lostKeys("", before, after, &lost)
	if len(lost) > 0 {
		sort.Strings(lost)
		return nil, fmt.Errorf("keys ToolHive's runner.RunConfig does not keep: %s", strings.Join(lost, ", "))
	}
	return append(out, '\n'), nil
}

// lostKeys records the path of every object key that has a non-empty
// value in before and is missing from after. Custom decoders inside the
// RunConfig do not see DisallowUnknownFields; the round trip catches what
// they silently skip.
func lostKeys(path string, before, after any, lost *[]string) {
	switch b := before.(type) {
	case map[string]any:
		a, _ := after.(map[string]any)
		for k, v := range b {
			p := k
			if path != "" {
				p = path + "." + k
			}
			av, ok := a[k]
			if !ok {
				if !empty(v) {
					*lost = append(*lost, p)
				}
				continue
			}
			lostKeys(p, v, av, lost)
		}
	case []any:
		a, _ := after.([]any)
		for i, v := range b {
			if i < len(a) {
				lostKeys(fmt.Sprintf("%s[%d]", path, i), v, a[i], lost)
			}
		}
	}
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
