package toolhive

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// The parts of `kubectl hivekeeper preflight -o json` and `switch -o
// json` the suites read: the plugin's own types live in its main
// package, and a suite reads what the binary prints, as a script would.

// PreflightReport is preflight's report, alone or inside switch's.
type PreflightReport struct {
	Operator *struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		Release   string `json:"release"`
	} `json:"operator"`
	Settings struct {
		Flags []string `json:"flags"`
	} `json:"settings"`
	Prediction Prediction `json:"prediction"`
	// Unmanaged are the workloads ToolHive's operator runs that
	// hivekeeper would refuse.
	Unmanaged []struct {
		Kind      string `json:"kind"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		Why       string `json:"why"`
		Allowed   bool   `json:"allowed"`
	} `json:"unmanaged"`
	Blockers []string `json:"blockers"`
	Summary  string   `json:"summary"`
	ExitCode int      `json:"exitCode"`
}

// Prediction is what preflight says a switch will do.
type Prediction struct {
	Settled   bool     `json:"settled"`
	Restarts  []Change `json:"restarts"`
	Recreated []Change `json:"recreated"`
	Rewritten []Change `json:"rewritten"`
	Created   []Change `json:"created"`
	Patched   []Change `json:"patched"`
}

// Change is one object of a prediction or an outcome.
type Change struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Owner     string `json:"owner"`
	Field     string `json:"field"`
	Detail    string `json:"detail"`
	// Pods are a restart's pods.
	Pods []string `json:"pods"`
}

// Key names the object: "<Kind> <namespace>/<name>".
func (c Change) Key() string { return c.Kind + " " + c.Namespace + "/" + c.Name }

// SwitchReport is switch's report.
type SwitchReport struct {
	Preflight *PreflightReport `json:"preflight"`
	Steps     []string         `json:"steps"`
	Notes     []string         `json:"notes"`
	Outcome   *SwitchOutcome   `json:"outcome"`
	Refused   string           `json:"refused"`
	Failed    string           `json:"failed"`
	Summary   string           `json:"summary"`
	ExitCode  int              `json:"exitCode"`
}

// SwitchOutcome is what a switch reports it did.
type SwitchOutcome struct {
	Settled     bool           `json:"settled"`
	Restarted   []Change       `json:"restarted"`
	Recreated   []Change       `json:"recreated"`
	Rewritten   []Change       `json:"rewritten"`
	Created     []Change       `json:"created"`
	Deleted     []Change       `json:"deleted"`
	Unpredicted []string       `json:"unpredicted"`
	Changed     map[string]int `json:"changed"`
}

// SwitchEvent is a line switch -o json writes as it goes.
type SwitchEvent struct {
	Event    string `json:"event"`
	Step     string `json:"step"`
	WaitsFor string `json:"waitsFor"`
	Limit    string `json:"limit"`
	Note     string `json:"note"`
	Elapsed  string `json:"elapsed"`
	Took     string `json:"took"`
}

// ReadSwitchOutput reads what switch -o json printed: an event per line
// as the switch went, then its report.
func ReadSwitchOutput(stdout string) (SwitchReport, []SwitchEvent, error) {
	var values []json.RawMessage
	dec := json.NewDecoder(strings.NewReader(stdout))
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return SwitchReport{}, nil, err
		}
		values = append(values, v)
	}
	var r SwitchReport
	if len(values) == 0 {
		return r, nil, errors.New("no JSON")
	}
	events := make([]SwitchEvent, len(values)-1)
	for i, v := range values[:len(values)-1] {
		if err := json.Unmarshal(v, &events[i]); err != nil {
			return r, nil, err
		}
	}
	return r, events, json.Unmarshal(values[len(values)-1], &r)
}
