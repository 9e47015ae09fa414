package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"sigs.k8s.io/yaml"

	vmcpconfig "github.com/stacklok/toolhive/pkg/vmcp/config"
)

// diffVMCPConfigs decodes two vMCP config.yaml files strictly with
// ToolHive's vmcp config.Config (a key it does not know is an error, not
// a silent loss), re-encodes both one way and compares them field by
// field, as diffRunConfigs does for RunConfigs.
func diffVMCPConfigs(fileA, fileB string) ([]byte, error) {
	report := DiffReport{Compared: []string{}, Differences: []Difference{}, Derived: []string{}}
	var sides [2]any
	for i, file := range []string{fileA, fileB} {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var cfg vmcpconfig.Config
		if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
			return nil, fmt.Errorf("%s: ToolHive's vmcp config.Config: %w", file, err)
		}
		out, err := json.Marshal(cfg)
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
