package toolhive

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
