package proxy

import (
	"fmt"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// invalidSpec is a user error in the spec: a condition, never a retry.
func invalidSpec(format string, a ...any) error {
	return &wiring.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec, Message: fmt.Sprintf(format, a...)}
}

// runtimeOptions are the RunConfig fields and proxy pod parts that
// spec.volumes, permissionProfile, audit, maxRequestBodySize,
// backendReplicas, sessionStorage and rateLimiting contribute.
type runtimeOptions struct {
	Volumes                     []string
	PermissionProfileNameOrPath string
	PermissionProfile           *schema.PermissionProfile
	Audit                       *schema.AuditConfig
	MaxRequestBodySize          int64
	ProxyReadTimeout            string
	Scaling                     *schema.ScalingConfig
	RateLimit                   *schema.RateLimitConfig
	RateLimitNamespace          string

	// ProxyVolumes and ProxyMounts are the configmap permission profile's.
	ProxyVolumes []corev1.Volume
	ProxyMounts  []corev1.VolumeMount
	// Session is the session storage's Redis: its password variable and
	// its CA bundle's volume.
	Session wiring.SessionStorageWiring
}

// applyTo sets the RunConfig fields.
func (o *runtimeOptions) applyTo(rc *schema.RunConfig) {
	rc.Volumes = o.Volumes
	rc.PermissionProfileNameOrPath = o.PermissionProfileNameOrPath
	rc.PermissionProfile = o.PermissionProfile
	rc.AuditConfig = o.Audit
	rc.MaxRequestBodySize = o.MaxRequestBodySize
	rc.ProxyReadTimeout = o.ProxyReadTimeout
	rc.ScalingConfig = o.Scaling
	rc.RateLimitConfig = o.RateLimit
	rc.RateLimitNamespace = o.RateLimitNamespace
}

// resolveRuntime maps the spec onto the runner as ToolHive's operator
// does for the same manifest (createRunConfigFromMCPServer,
// populateScalingConfig and the proxy Deployment's env and volumes), and
// re-checks what the schema refuses, for objects stored before it did.
func resolveRuntime(s *thv1.MCPServer, defaultRedis *wiring.DefaultRedis) (runtimeOptions, error) {
	o := runtimeOptions{
		Audit:              wiring.Audit(s.Spec.Audit),
		MaxRequestBodySize: s.Spec.MaxRequestBodySize,
		Session:            wiring.SessionStorage(s.Spec.SessionStorage, defaultRedis, wiring.FallbackUnlessRedis),
	}
	if o.MaxRequestBodySize < 0 {
		return o, invalidSpec("spec.maxRequestBodySize may not be negative")
	}
	vols, err := volumeSpecs(s.Spec.Volumes)
	if err != nil {
		return o, err
	}
	if o.ProxyReadTimeout, err = proxyReadTimeout(s.Spec.ProxyReadTimeout); err != nil {
		return o, err
	}
	o.Volumes = vols
	if err := o.resolvePermissionProfile(s.Spec.PermissionProfile); err != nil {
		return o, err
	}

	redis := o.Session.Redis
	if s.Spec.BackendReplicas != nil || redis != nil {
		o.Scaling = &schema.ScalingConfig{SessionRedis: redis}
		if s.Spec.BackendReplicas != nil {
			o.Scaling.BackendReplicas = ptr.To(*s.Spec.BackendReplicas)
		}
	}
	if rl := s.Spec.RateLimiting; rl != nil {
		if redis == nil {
			// The runner refuses to start without Redis for the buckets.
			return o, invalidSpec("spec.rateLimiting requires spec.sessionStorage with provider redis (or hivekeeper's default Redis)")
		}
		if o.RateLimit, err = rateLimit(rl); err != nil {
			return o, err
		}
		o.RateLimitNamespace = s.Namespace
	}
	return o, nil
}

// proxyReadTimeout is spec.proxyReadTimeout as the RunConfig carries it:
// the duration as Go prints it ("90s" is "1m30s"), and nothing for zero,
// which leaves the runner's default, as ToolHive's builder writes it. A
// negative duration is refused as that builder refuses it.
func proxyReadTimeout(v *string) (string, error) {
	if v == nil {
		return "", nil
	}
	d, err := time.ParseDuration(*v)
	switch {
	case err != nil:
		return "", invalidSpec("spec.proxyReadTimeout %q is not a duration", *v)
	case d < 0:
		return "", invalidSpec("spec.proxyReadTimeout: proxy-read-timeout must be non-negative, got %s", d)
	case d == 0:
		return "", nil
	}
	return d.String(), nil
}

// volumeSpecs renders spec.volumes as the runner records them,
// "<hostPath>:<mountPath>", with ":ro" when read-only. A path the runner's
// mount parser refuses is an error here too.
func volumeSpecs(vols []thv1.Volume) ([]string, error) {
	var out []string
	for _, v := range vols {
		for _, p := range []struct{ field, value string }{{"hostPath", v.HostPath}, {"mountPath", v.MountPath}} {
			if p.value == "" {
				return nil, invalidSpec("spec.volumes[%s].%s is empty", v.Name, p.field)
			}
			if strings.ContainsAny(p.value, ":$&;|`\x00") {
				return nil, invalidSpec("spec.volumes[%s].%s may not contain ':', '$', '&', ';', '|' or '`': ToolHive's runner cannot parse such a mount", v.Name, p.field)
			}
		}
		if strings.HasPrefix(v.MountPath, `\`) {
			return nil, invalidSpec(`spec.volumes[%s].mountPath may not start with '\'`, v.Name)
		}
		spec := v.HostPath + ":" + v.MountPath
		if v.ReadOnly {
			spec += ":ro"
		}
		out = append(out, spec)
	}
	return out, nil
}

// resolvePermissionProfile sets the permission profile fields. A builtin
// profile is named and written out; a configmap one is named by the path
// of its key where the proxy pod mounts the ConfigMap, and its content is
// not read (ToolHive's runner does not read it either). The volumes are
// added to the written profile as the runner's builder adds them. With
// neither a profile nor volumes nothing is written, where ToolHive's
// operator writes its builder's default (README, Differences).
func (o *runtimeOptions) resolvePermissionProfile(ref *thv1.PermissionProfileRef) error {
	switch {
	case ref == nil:
		if len(o.Volumes) > 0 {
			o.PermissionProfile = schema.BuiltinProfile(schema.ProfileNetwork)
		}
	case ref.Type == thv1.PermissionProfileTypeConfigMap:
		if ref.Key == "" || strings.ContainsAny(ref.Key, `/\`) {
			return invalidSpec("spec.permissionProfile.key must name a key of ConfigMap %s", ref.Name)
		}
		o.PermissionProfileNameOrPath = path.Join(naming.PermissionProfileMountPath, ref.Key)
		o.ProxyVolumes = []corev1.Volume{{Name: naming.PermissionProfileVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}},
		}}}
		o.ProxyMounts = []corev1.VolumeMount{{Name: naming.PermissionProfileVolume, MountPath: naming.PermissionProfileMountPath, ReadOnly: true}}
	default: // builtin, the schema's default
		switch ref.Name {
		case schema.ProfileNone, schema.ProfileStdio, schema.ProfileNetwork:
		default:
			return invalidSpec("spec.permissionProfile.name %q is not a builtin profile (none or network)", ref.Name)
		}
		o.PermissionProfileNameOrPath = ref.Name
		o.PermissionProfile = schema.BuiltinProfile(ref.Name)
	}
	if o.PermissionProfile != nil {
		addMounts(o.PermissionProfile, o.Volumes)
	}
	return nil
}

// addMounts adds each volume to the profile's read or write mounts as
// ToolHive's builder does: ":ro" makes it a read mount, and a volume whose
// container path a mount already has is left out.
func addMounts(p *schema.PermissionProfile, volumes []string) {
	seen := map[string]bool{}
	for _, m := range append(append([]string(nil), p.Read...), p.Write...) {
		seen[mountTarget(m)] = true
	}
	for _, v := range volumes {
		readOnly := strings.HasSuffix(v, ":ro")
		m := strings.TrimSuffix(v, ":ro")
		t := mountTarget(m)
		if seen[t] {
			continue
		}
		seen[t] = true
		if readOnly {
			p.Read = append(p.Read, m)
		} else {
			p.Write = append(p.Write, m)
		}
	}
}

// mountTarget is a mount declaration's container path, cleaned: the part
// after the colon of "<host>:<container>", or the whole of a single path.
func mountTarget(m string) string {
	if _, target, ok := strings.Cut(m, ":"); ok {
		return path.Clean(target)
	}
	return path.Clean(m)
}

// rateLimit is spec.rateLimiting in the RunConfig's encoding: the same
// keys, each refill period as ToolHive re-encodes it ("60s" is "1m0s").
func rateLimit(rl *thv1.RateLimitConfig) (*schema.RateLimitConfig, error) {
	bucket := func(where string, b *thv1.RateLimitBucket) (*schema.RateLimitBucket, error) {
		if b == nil {
			return nil, nil
		}
		d, err := time.ParseDuration(b.RefillPeriod)
		if err != nil || d <= 0 {
			return nil, invalidSpec("spec.rateLimiting.%s.refillPeriod %q is not a positive duration", where, b.RefillPeriod)
		}
		if b.MaxTokens < 1 {
			return nil, invalidSpec("spec.rateLimiting.%s.maxTokens must be at least 1", where)
		}
		return &schema.RateLimitBucket{MaxTokens: b.MaxTokens, RefillPeriod: d.String()}, nil
	}
	out := &schema.RateLimitConfig{}
	var err error
	if out.Shared, err = bucket("shared", rl.Shared); err != nil {
		return nil, err
	}
	if out.PerUser, err = bucket("perUser", rl.PerUser); err != nil {
		return nil, err
	}
	for _, t := range rl.Tools {
		rt := schema.ToolRateLimitConfig{Name: t.Name}
		if rt.Shared, err = bucket("tools["+t.Name+"].shared", t.Shared); err != nil {
			return nil, err
		}
		if rt.PerUser, err = bucket("tools["+t.Name+"].perUser", t.PerUser); err != nil {
			return nil, err
		}
		out.Tools = append(out.Tools, rt)
	}
	return out, nil
}
