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
//	thvcheck diff A B
//
// decodes both files the same way, completes a side without
// middleware_configs as the runner does when it starts (see
// diffRunConfigs), and compares what ToolHive decoded, field by field, at
// every level of the re-encoded JSON. It prints one
// JSON object on stdout: "compared", every leaf path of either side in
// sorted order, and "differences", each path whose values differ with
// both values ("a" and "b"; absent when that side lacks the path). A
// null, an empty object or an empty list counts as absent: ToolHive's Go
// types read them alike. It exits 0 whether or not the files differ; the
// caller judges the differences.
//
//	thvcheck asdiff A B
//
// does the same for two authserver-config.yaml files (a vMCP's embedded
// authorization server) with ToolHive's authserver.RunConfig; an empty
// file is none.
//
//	thvcheck redis [PASSWORD [CERT KEY]]
//
// serves an in-memory Redis on a free loopback port, requiring PASSWORD
// when given, and speaking TLS with the PEM certificate and key when
// given, until stdin closes; it prints the address first.
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
	var out []byte
	var err error
	switch {
	case len(os.Args) == 3 && os.Args[1] == "runconfig":
		out, err = checkRunConfig(os.Args[2])
	case len(os.Args) == 4 && os.Args[1] == "diff":
		out, err = diffRunConfigs(os.Args[2], os.Args[3])
	case len(os.Args) == 4 && os.Args[1] == "vmcpdiff":
		out, err = diffVMCPConfigs(os.Args[2], os.Args[3])
	case len(os.Args) == 4 && os.Args[1] == "asdiff":
		out, err = diffAuthServerConfigs(os.Args[2], os.Args[3])
	case len(os.Args) >= 2 && len(os.Args) <= 3 && os.Args[1] == "redis":
		err = serveRedis(strings.Join(os.Args[2:], ""), "", "")
	case len(os.Args) == 5 && os.Args[1] == "redis":
		err = serveRedis(os.Args[2], os.Args[3], os.Args[4])
	default:
		fmt.Fprintln(os.Stderr, "usage: thvcheck runconfig FILE | thvcheck diff A B | thvcheck vmcpdiff A B | thvcheck asdiff A B | thvcheck redis [PASSWORD [CERT KEY]]")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}

func checkRunConfig(file string) ([]byte, error) {
	rc, err := decodeRunConfig(file)
	if err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(rc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// decodeRunConfig decodes file strictly into runner.RunConfig and fails
// when a key with a value does not survive the round trip.
func decodeRunConfig(file string) (*runner.RunConfig, error) {
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
	out, err := json.Marshal(&rc)
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
	return &rc, nil
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
