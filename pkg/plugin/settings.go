package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/operatorenv"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// Settings are hivekeeper's counterparts of the operator's operator-wide
// settings.
type Settings struct {
	// Flags are hivekeeper's flags (operatorenv.Flags).
	Flags []string `json:"flags"`
	// Values are the hivekeeper chart values that render Flags.
	Values map[string]any `json:"values"`
	// NotCarried are the variables set that have no flag, with why.
	NotCarried []Setting `json:"notCarriedOver,omitempty"`
	// Carried are the variables of the process (operatorenv.
	// ProcessVariables: proxies, Go's runtime, the time zone) set to a
	// value preflight read: Values gives them to hivekeeper's container
	// as they are (extraEnv).
	Carried []Setting `json:"carried,omitempty"`
	// Accepted are unknown variables --accept-env names: hivekeeper runs
	// without them.
	Accepted []string `json:"accepted,omitempty"`
	// Unknown are variables set that hivekeeper does not know: their
	// meaning is unknown, so no switch can keep it.
	Unknown []string `json:"unknown,omitempty"`
	// Unread are variables with a flag whose value preflight did not read
	// (in a Secret): the values above leave them at hivekeeper's default.
	Unread []string `json:"unread,omitempty"`
}

// Setting is a variable of the operator's environment and what becomes
// of it.
type Setting struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// settingsOf maps the operator's environment (none when op is nil: a
// cluster without ToolHive's operator gets hivekeeper's defaults).
// accept are the unknown variables the user accepts leaving behind.
func settingsOf(op *Operator, accept []string) (Settings, error) {
	var s Settings
	var env []string
	var extraEnv []any
	if op != nil {
		for _, e := range op.Env {
			v, known := operatorenv.Lookup(e.Name)
			process, isProcess := operatorenv.Process(e.Name)
			switch {
			case known && e.Unread && v.Flag != "":
				s.Unread = append(s.Unread, e.Name+" ("+e.From+")")
			case known && !e.Unread:
				env = append(env, e.Name+"="+e.Value)
			case known:
			case isProcess && e.Unread:
				s.NotCarried = append(s.NotCarried, Setting{Name: e.Name, Why: process.Why + "; its value comes from " + e.From +
					", which preflight does not read: set it under extraEnv by hand if hivekeeper needs it"})
			case isProcess:
				s.Carried = append(s.Carried, Setting{Name: e.Name, Why: process.Why})
				extraEnv = append(extraEnv, map[string]any{"name": e.Name, "value": e.Value})
			case slices.Contains(accept, e.Name):
				s.Accepted = append(s.Accepted, e.Name)
			case e.Unread:
				// A Secret's variables, or one unknown: what it holds is
				// not known either.
				s.Unread = append(s.Unread, e.Name+" ("+e.From+")")
			default:
				s.Unknown = append(s.Unknown, e.Name)
			}
		}
	}
	flags, unmapped, err := operatorenv.Flags(env)
	if err != nil {
		return s, err
	}
	// What the operator's release and namespace, rather than its
	// environment, decide: the output written, and where the
	// installation's instance id is kept.
	flags = append(flags, "--toolhive-release="+targetRelease(op).Version)
	if op != nil {
		flags = append(flags, "--toolhive-instance-id-namespace="+op.Namespace)
	}
	slices.Sort(flags)
	s.Flags = flags
	for _, u := range unmapped {
		s.NotCarried = append(s.NotCarried, Setting{Name: u.Name, Why: u.Why})
	}
	if s.Values, err = operatorenv.Values(flags); err != nil {
		return s, err
	}
	if len(extraEnv) > 0 {
		s.Values["extraEnv"] = extraEnv
	}
	return s, nil
}

// defaultRedisKey is the password key of a default Redis Secret named
// without a key, as in ToolHive's operator and hivekeeper's flag.
const defaultRedisKey = "redis-password"

// options are the app.Options the hivekeeper binary would run with, given
// flags: the flags operatorenv maps to, parsed as the binary parses them.
func options(flags []string) (app.Options, error) {
	fs := pflag.NewFlagSet("hivekeeper", pflag.ContinueOnError)
	var o app.Options
	var redisAddr, redisSecret, redisKey, caName, caKey, logFormat string
	var redisTLS, usageMetrics, skipUpdateCheck bool
	var toolhiveRelease string
	fs.StringSliceVar(&o.Namespaces, "namespaces", nil, "")
	fs.StringVar(&toolhiveRelease, "toolhive-release", release.Newest().Version, "")
	fs.StringVar(&o.RunnerImage, "runner-image", "", "")
	fs.StringVar(&o.VMCPImage, "vmcp-image", "", "")
	fs.StringVar(&o.RegistryAPIImage, "registry-api-image", app.DefaultRegistryAPIImage, "")
	fs.BoolVar(&usageMetrics, "toolhive-usage-metrics", true, "")
	fs.BoolVar(&skipUpdateCheck, "toolhive-skip-update-check", false, "")
	fs.String("toolhive-instance-id-namespace", "", "")
	fs.StringSliceVar(&o.PullSecrets, "default-image-pull-secrets", nil, "")
	fs.StringVar(&o.ProxyHost, "proxy-host", app.DefaultProxyHost, "")
	fs.StringVar(&redisAddr, "default-redis-addr", "", "")
	fs.StringVar(&redisSecret, "default-redis-secret-name", "", "")
	fs.StringVar(&redisKey, "default-redis-secret-key", "", "")
	fs.BoolVar(&redisTLS, "default-redis-tls-enabled", false, "")
	fs.StringVar(&caName, "default-redis-tls-ca-secret-name", "", "")
	fs.StringVar(&caKey, "default-redis-tls-ca-secret-key", "", "")
	fs.StringVar(&logFormat, "log-format", "text", "")
	if err := fs.Parse(flags); err != nil {
		return o, err
	}
	var err error
	if o.Release, err = release.Lookup(toolhiveRelease); err != nil {
		return o, err
	}
	o.UsageMetrics = wiring.UsageMetrics{SkipUpdateCheck: skipUpdateCheck, Disabled: !usageMetrics}

	// The checks ToolHive's operator and hivekeeper's binary make at start.
	switch {
	case (caName == "") != (caKey == ""):
		return o, errors.New("the default Redis's CA Secret and key must both be set")
	case caName != "" && !redisTLS:
		return o, errors.New("the default Redis's CA Secret needs TLS enabled")
	case redisAddr == "" && redisTLS:
		return o, errors.New("the default Redis's TLS needs its address")
	case redisAddr != "":
		r := &wiring.DefaultRedis{Addr: redisAddr, SecretName: redisSecret, SecretKey: redisKey}
		if r.SecretName != "" && r.SecretKey == "" {
			r.SecretKey = defaultRedisKey
		}
		if redisTLS {
			r.TLS = &thv1.RedisTLSConfig{}
			if caName != "" {
				r.TLS.CACertSecretRef = &thv1.SecretKeyRef{Name: caName, Key: caKey}
			}
		}
		o.DefaultRedis = r
	}
	o.Namespaces = slices.DeleteFunc(o.Namespaces, func(s string) bool { return strings.TrimSpace(s) == "" })
	// Statuses that list referrers or members are recomputed at once:
	// nothing here waits for a burst of changes to end.
	o.FanInWindow = -1
	o.Workers = 4
	return o, nil
}

// targetRelease is the ToolHive release whose output hivekeeper writes
// for the operator op: its own release where hivekeeper writes it, else
// the newest older one it writes, else (no operator, a release older than
// every one hivekeeper writes, or none known) the newest.
func targetRelease(op *Operator) release.Release {
	if op == nil {
		return release.Newest()
	}
	return release.Target(op.Release)
}

// releaseNote says how the operator's release compares with the one
// hivekeeper writes for it, "" when it is that one.
func releaseNote(op *Operator) string {
	if op == nil {
		return ""
	}
	target := targetRelease(op).Version
	_, exact, err := release.For(op.Release)
	switch {
	case op.Release == "":
		return fmt.Sprintf("its release is unknown (no image tag or %s label); hivekeeper writes what ToolHive %s's operator writes", labelVersion, target)
	case err == nil && exact:
		return ""
	default:
		return fmt.Sprintf("hivekeeper writes what ToolHive %s's operator writes; children written by %s may differ as they would at ToolHive's own upgrade to %s", target, op.Release, target)
	}
}

// withInstanceID gives opts the installation's instance id hivekeeper
// would read at start with flags (app.ResolveInstanceID), read here
// without writing: where the release passes it to the workloads and
// nothing opts out. A ConfigMap that is missing, or that preflight may not
// read, leaves the id empty, and the prediction then shows the workloads
// that would change.
func withInstanceID(ctx context.Context, kube kubernetes.Interface, flags []string, opts *app.Options) error {
	if !opts.Release.WorkloadUsageMetrics || opts.UsageMetrics.SkipUpdateCheck {
		return nil
	}
	ns := app.DefaultInstanceIDNamespace
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "--toolhive-instance-id-namespace="); ok && v != "" {
			ns = v
		}
	}
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, app.InstanceIDConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading the installation's instance id (ConfigMap %s/%s): %w", ns, app.InstanceIDConfigMap, err)
	}
	opts.UsageMetrics.AnonymousID = app.StoredInstanceID(cm)
	return nil
}
