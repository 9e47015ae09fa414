package plugin

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Status is what `kubectl hivekeeper status` reports: the record of the
// last switch, who holds it, and both operators' Deployments.
type Status struct {
	Cluster *Target `json:"cluster,omitempty"`
	// Record is the record's ConfigMap, "" when there is none.
	Record string `json:"record,omitempty"`
	Phase  string `json:"phase,omitempty"`
	// Started is when the last switch started.
	Started  string `json:"started,omitempty"`
	Finished string `json:"finished,omitempty"`
	// Holder is the run that holds the record now, nil when none does.
	Holder *holder `json:"holder,omitempty"`
	// Stale: the holder has not renewed the record for longer than its
	// timeout, and --force may take it over.
	Stale bool   `json:"stale,omitempty"`
	Step  string `json:"step,omitempty"`
	// Failed is the error the last run stopped on.
	Failed     string          `json:"failed,omitempty"`
	ToolHive   *OperatorStatus `json:"toolhive,omitempty"`
	Hivekeeper *OperatorStatus `json:"hivekeeper,omitempty"`
}

// OperatorStatus is an operator's Deployment as it is now.
type OperatorStatus struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Replicas is the replica count asked for; Ready, how many are.
	Replicas int32 `json:"replicas"`
	Ready    int32 `json:"ready"`
	// Missing: the Deployment is not there.
	Missing bool `json:"missing,omitempty"`
}

func newStatus(g *globals, stdout io.Writer) *cobra.Command {
	var hkNamespace, hkName, output, namespace string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the record of the last switch, who holds it, and both operators' state",
		Long: `status reads the record of the last switch (the ConfigMap hivekeeper-switch
beside hivekeeper), and says its phase, the run that holds it now (user,
host, plugin version, since when, last renewed, and whether --force may
take it over), the last step done or the error the last run stopped on,
and how many replicas ToolHive's operator and hivekeeper run. It changes
nothing.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.connect(output, &namespace)
			if err != nil {
				return err
			}
			st, err := status(cmd.Context(), c.kube, hkNamespace, hkName, namespace)
			if err != nil {
				return err
			}
			st.Cluster = &g.target
			return st.write(stdout, output)
		},
	}
	f := cmd.Flags()
	f.StringVar(&hkNamespace, "hivekeeper-namespace", "", "Namespace of hivekeeper's Deployment; empty: looked for in every namespace.")
	f.StringVar(&hkName, "hivekeeper-deployment", "", "Name of hivekeeper's Deployment; empty: the one the chart's labels mark.")
	f.StringVarP(&output, "output", "o", "text", "Output format: text, json or yaml.")
	return cmd
}

// status reads the record and the operators' Deployments: ToolHive's as
// the record names it, else as preflight finds it (in operatorNS, or in
// every namespace).
func status(ctx context.Context, kube kubernetes.Interface, hkNamespace, hkName, operatorNS string) (*Status, error) {
	hk, err := findHivekeeper(ctx, kube, hkNamespace, hkName)
	if err != nil {
		return nil, err
	}
	st := &Status{Hivekeeper: deploymentStatus(hk)}
	rec, err := readRecord(ctx, kube, hk.Namespace)
	if err != nil {
		return nil, err
	}
	var opNS, opName string
	if rec != nil {
		st.Record = hk.Namespace + "/" + recordName
		st.Phase, st.Started, st.Holder, st.Step, st.Failed = rec.Phase, rec.Started.UTC().Format(time.RFC3339), rec.Holder, rec.Step, rec.Failed
		if rec.Finished != nil {
			st.Finished = rec.Finished.UTC().Format(time.RFC3339)
		}
		st.Stale = rec.Holder != nil && rec.Holder.stale(time.Now())
		opNS, opName = rec.Operator.Namespace, rec.Operator.Name
	} else if op, err := findOperator(ctx, kube, operatorNS, ""); err != nil {
		return nil, err
	} else if op != nil {
		opNS, opName = op.Namespace, op.Name
	}
	if opName != "" {
		d, err := kube.AppsV1().Deployments(opNS).Get(ctx, opName, getOpts)
		switch {
		case apierrors.IsNotFound(err):
			st.ToolHive = &OperatorStatus{Namespace: opNS, Name: opName, Missing: true}
		case err != nil:
			return nil, readError(err, "get", "deployments", opNS)
		default:
			st.ToolHive = deploymentStatus(d)
		}
	}
	return st, nil
}

func deploymentStatus(d *appsv1.Deployment) *OperatorStatus {
	return &OperatorStatus{Namespace: d.Namespace, Name: d.Name, Replicas: ptr.Deref(d.Spec.Replicas, 1), Ready: d.Status.ReadyReplicas}
}

func (s *Status) write(w io.Writer, format string) error {
	if structured, err := writeStructured(w, format, s); structured {
		return err
	}
	t := &text{w: w}
	if s.Cluster != nil {
		t.line(0, "Cluster: %s", s.Cluster)
	}
	if s.Record == "" {
		t.line(0, "Switch: none recorded")
	} else {
		t.line(0, "Switch: ConfigMap %s, phase %s, started %s", s.Record, s.Phase, s.Started)
		switch h := s.Holder; {
		case h == nil && s.Finished != "":
			t.line(1, "held by no one: the last run ended %s", s.Finished)
		case h == nil:
			t.line(1, "held by no one")
		default:
			t.line(1, "held by %s, last renewed %s", h, h.Renewed.UTC().Format(time.RFC3339))
			if s.Stale {
				t.line(1, "silent for longer than its timeout of %s: switch --force may take it over", h.Timeout.Duration)
			} else {
				t.line(1, "switch --force may take it over after %s", h.Renewed.Add(h.Timeout.Duration).UTC().Format(time.RFC3339))
			}
		}
		if s.Step != "" {
			t.line(1, "last step: %s", s.Step)
		}
		if s.Failed != "" {
			t.line(1, "the last run failed: %s", s.Failed)
		}
	}
	for _, o := range []struct {
		who string
		st  *OperatorStatus
	}{{"ToolHive's operator", s.ToolHive}, {"hivekeeper", s.Hivekeeper}} {
		switch {
		case o.st == nil:
			t.line(0, "%s: none found", o.who)
		case o.st.Missing:
			t.line(0, "%s: Deployment %s/%s is gone", o.who, o.st.Namespace, o.st.Name)
		default:
			t.line(0, "%s: Deployment %s/%s, %s, %d ready", o.who, o.st.Namespace, o.st.Name, count(int(o.st.Replicas), "replica", "replicas"), o.st.Ready)
		}
	}
	return t.err
}
