package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"sigs.k8s.io/yaml"

	"github.com/stacklok/toolhive/pkg/authserver"
)

// diffAuthServerConfigs decodes two authserver-config.yaml files (the
// embedded authorization server of a vMCP, beside its config.yaml)
// strictly with ToolHive's authserver.RunConfig and compares them field by
// field, as diffVMCPConfigs does. An empty file is a vMCP without one.
func diffAuthServerConfigs(fileA, fileB string) ([]byte, error) {
	report := DiffReport{Compared: []string{}, Differences: []Difference{}, Derived: []string{}}
	var sides [2]any
	for i, file := range []string{fileA, fileB} {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if len(raw) == 0 {
			continue
		}
		var rc authserver.RunConfig
		if err := yaml.UnmarshalStrict(raw, &rc); err != nil {
			return nil, fmt.Errorf("%s: ToolHive's authserver.RunConfig: %w", file, err)
		}
		out, err := json.Marshal(rc)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(out, &sides[i]); err != nil {
			return nil, err
		}
	}
	compare("", sides[0], sides[1], &report)
	sort.Strings(report.Compared)
	sort.Slice(report.Differences, func(i, j int) bool { return report.Differences[i].Path < report.Differences[j].Path })
	out, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
