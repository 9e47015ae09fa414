package wiring

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// Webhook wiring, with ToolHive's names and paths: each Secret key a
// webhook uses (HMAC key, CA bundle, client certificate and key) is a
// Secret volume of its own, mounted read-only as one file under
// WebhookMountRoot, and the RunConfig names that file.
const (
	WebhookMountRoot = "/etc/toolhive/webhooks"
	// WebhookVolumePrefix starts the volume name; a hash of the mount's
	// identifier follows.
	WebhookVolumePrefix = "whsec-"

	// The runner's bounds of a webhook timeout (ToolHive's
	// webhook.MinTimeout and MaxTimeout); zero means its 10s default.
	webhookMinTimeout = time.Second
	webhookMaxTimeout = 30 * time.Second
)

// The purpose of a mounted Secret key and the file it becomes.
var (
	webhookHMAC       = webhookSecret{purpose: "hmac", file: "hmac"}
	webhookCA         = webhookSecret{purpose: "tls_ca", file: "ca.crt"}
	webhookClientCert = webhookSecret{purpose: "tls_client_cert", file: "tls.crt"}
	webhookClientKey  = webhookSecret{purpose: "tls_client_key", file: "tls.key"}
)

type webhookSecret struct{ purpose, file string }

// WebhookWiring is what an MCPWebhookConfig reference contributes to a
// proxy: the RunConfig's validating_webhooks and mutating_webhooks, and
// the Secret volumes and mounts their files come from.
type WebhookWiring struct {
	Validating, Mutating []schema.WebhookConfig
	Volumes              []corev1.Volume
	Mounts               []corev1.VolumeMount
}

// Webhooks maps a referenced MCPWebhookConfig (nil: none) onto a proxy as
// ToolHive's operator does for the same manifest: every webhook keeps its
// name, URL and failure policy (fail when unset), its timeout in
// nanoseconds (0 when unset, which the runner treats as its default), and
// every Secret key it names becomes a file the RunConfig points at. A
// client certificate without its key (or the reverse) is not mounted
// (ValidateWebhookConfig reports it), since the runner needs both.
//
// The config is validated by its controller; a stored config that fails
// the same checks is an InvalidSpecError here, so nothing is deployed
// from it.
func Webhooks(cfg *thv1.MCPWebhookConfig) (WebhookWiring, error) {
	if cfg == nil {
		return WebhookWiring{}, nil
	}
	if errs := ValidateWebhookConfig(cfg); len(errs) > 0 {
		return WebhookWiring{}, &InvalidSpecError{Condition: thv1.ConditionWebhookConfigValidated, Reason: thv1.ReasonWebhookConfigInvalid,
			Message: fmt.Sprintf("MCPWebhookConfig %s: %s", cfg.Name, strings.Join(errs, "; "))}
	}
	mounts := map[string]webhookMount{}
	var w WebhookWiring
	w.Validating = webhookEntries("validating", cfg.Spec.Validating, mounts)
	w.Mutating = webhookEntries("mutating", cfg.Spec.Mutating, mounts)
	for _, id := range slices.Sorted(maps.Keys(mounts)) {
		m := mounts[id]
		name := webhookVolumeName(id)
		w.Volumes = append(w.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: m.ref.Name,
			Items:      []corev1.KeyToPath{{Key: m.ref.Key, Path: m.file}},
		}}})
		w.Mounts = append(w.Mounts, corev1.VolumeMount{Name: name, MountPath: webhookFilePath(id, m.file), SubPath: m.file, ReadOnly: true})
	}
	return w, nil
}

// ApplyTo sets the RunConfig's webhooks.
func (w WebhookWiring) ApplyTo(rc *schema.RunConfig) {
	rc.ValidatingWebhooks, rc.MutatingWebhooks = w.Validating, w.Mutating
}

// webhookMount is one Secret key mounted as a file.
type webhookMount struct {
	ref  thv1.SecretKeyRef
	file string
}

// webhookEntries renders the webhooks of one list (kind is validating or
// mutating) and records the Secret keys they mount in mounts, by
// identifier: the same key used twice for the same purpose by webhooks of
// the same name is mounted once.
func webhookEntries(kind string, specs []thv1.WebhookSpec, mounts map[string]webhookMount) []schema.WebhookConfig {
	var out []schema.WebhookConfig
	for _, s := range specs {
		mount := func(ref *thv1.SecretKeyRef, sec webhookSecret) string {
			id := webhookMountID(kind, s.Name, sec.purpose, *ref)
			mounts[id] = webhookMount{ref: *ref, file: sec.file}
			return webhookFilePath(id, sec.file)
		}
		e := schema.WebhookConfig{Name: s.Name, URL: s.URL, FailurePolicy: strings.ToLower(s.FailurePolicy)}
		if e.FailurePolicy == "" {
			e.FailurePolicy = thv1.WebhookFailurePolicyFail
		}
		if s.Timeout != nil {
			d, _ := time.ParseDuration(*s.Timeout) // validated
			e.Timeout = int64(d)
		}
		if s.HMACSecretRef != nil {
			e.HMACSecretRef = mount(s.HMACSecretRef, webhookHMAC)
		}
		if t := s.TLSConfig; t != nil {
			e.TLSConfig = &schema.WebhookTLSConfig{InsecureSkipVerify: t.InsecureSkipVerify}
			if t.CASecretRef != nil {
				e.TLSConfig.CABundlePath = mount(t.CASecretRef, webhookCA)
			}
			if t.ClientCertSecretRef != nil && t.ClientKeySecretRef != nil {
				e.TLSConfig.ClientCertPath = mount(t.ClientCertSecretRef, webhookClientCert)
				e.TLSConfig.ClientKeyPath = mount(t.ClientKeySecretRef, webhookClientKey)
			}
		}
		out = append(out, e)
	}
	return out
}

var notEnvChar = regexp.MustCompile(`[^A-Z0-9_]`)

// webhookMountID is ToolHive's identifier of a mounted Secret key:
// WEBHOOK_<kind>_<webhook>_<purpose>_<hash of "secret/key">, upper case,
// every character outside [A-Z0-9_] as '_'. It names the mount directory
// (in lower case) and, hashed, the volume.
func webhookMountID(kind, webhook, purpose string, ref thv1.SecretKeyRef) string {
	id := strings.ToUpper(strings.Join([]string{"WEBHOOK", kind, webhook, purpose, toolhiveHash(ref.Name + "/" + ref.Key)}, "_"))
	return notEnvChar.ReplaceAllString(id, "_")
}

func webhookFilePath(id, file string) string {
	return path.Join(WebhookMountRoot, strings.ToLower(id), file)
}

// webhookVolumeName is whsec- and at most 12 hex digits of the
// identifier's hash, as ToolHive names the volume.
func webhookVolumeName(id string) string {
	h := toolhiveHash(id)
	if len(h) > 12 {
		h = h[:12]
	}
	return WebhookVolumePrefix + h
}

// toolhiveHash is the hash ToolHive's operator derives webhook mount
// names from (ConfigHash of the identifier). The paths it yields are in
// the RunConfig, so they must be ToolHive's to the character.
func toolhiveHash(v string) string { return ConfigHash(v) }

// ValidateWebhookConfig returns every problem of an MCPWebhookConfig that
// the runner would otherwise only report when it starts (and then fails)
// with it, as ToolHive's operator checks them: a URL it can parse, https
// unless tlsConfig.insecureSkipVerify, a known failure policy, a timeout
// of 1s to 30s (or 0). It adds what ToolHive's operator lets through to a
// runner that cannot use it: a URL that is not http(s) with a host, a
// duration the runner cannot parse, a client certificate without its key
// (ToolHive's operator silently leaves both out), two webhooks of one
// list with the same name (the name is how ToolHive's runner tells
// webhooks apart), and Secret references without a name or key.
// The words of the two checks ValidateWebhookConfig adds where ToolHive's
// operator deploys the config (dropping a half client certificate, or
// keeping two webhooks of one name): deliberate refusals, which preflight
// names as blockers of a switch.
const (
	WebhookHalfClientCert = "clientCertSecretRef and clientKeySecretRef must be set together"
	WebhookNameTaken      = "is used by an earlier webhook of the list"
)

func ValidateWebhookConfig(c *thv1.MCPWebhookConfig) []string {
	var errs []string
	if len(c.Spec.Validating)+len(c.Spec.Mutating) == 0 {
		errs = append(errs, "spec: at least one validating or mutating webhook must be defined")
	}
	volumes := map[string]string{}
	for _, list := range []struct {
		field, kind string
		specs       []thv1.WebhookSpec
	}{{"spec.validating", "validating", c.Spec.Validating}, {"spec.mutating", "mutating", c.Spec.Mutating}} {
		names := map[string]bool{}
		for i, s := range list.specs {
			at := fmt.Sprintf("%s[%d]", list.field, i)
			if s.Name == "" {
				errs = append(errs, at+".name: required")
			} else if names[s.Name] {
				errs = append(errs, fmt.Sprintf("%s.name: %q %s", at, s.Name, WebhookNameTaken))
			}
			names[s.Name] = true
			errs = append(errs, checkWebhookURL(at, s)...)
			switch strings.ToLower(s.FailurePolicy) {
			case "", thv1.WebhookFailurePolicyFail, thv1.WebhookFailurePolicyIgnore:
			default:
				errs = append(errs, fmt.Sprintf("%s.failurePolicy: %q is not fail or ignore", at, s.FailurePolicy))
			}
			if s.Timeout != nil {
				d, err := time.ParseDuration(*s.Timeout)
				switch {
				case err != nil:
					errs = append(errs, fmt.Sprintf("%s.timeout: %q is not a duration such as 10s", at, *s.Timeout))
				case d != 0 && (d < webhookMinTimeout || d > webhookMaxTimeout):
					errs = append(errs, fmt.Sprintf("%s.timeout: %s is not between %s and %s", at, *s.Timeout, webhookMinTimeout, webhookMaxTimeout))
				}
			}
			refs := []webhookRef{{"hmacSecretRef", s.HMACSecretRef, webhookHMAC}}
			if t := s.TLSConfig; t != nil {
				if (t.ClientCertSecretRef == nil) != (t.ClientKeySecretRef == nil) {
					errs = append(errs, at+".tlsConfig: "+WebhookHalfClientCert)
				}
				refs = append(refs, webhookRef{"tlsConfig.caSecretRef", t.CASecretRef, webhookCA},
					webhookRef{"tlsConfig.clientCertSecretRef", t.ClientCertSecretRef, webhookClientCert},
					webhookRef{"tlsConfig.clientKeySecretRef", t.ClientKeySecretRef, webhookClientKey})
			}
			for _, r := range refs {
				if r.ref == nil {
					continue
				}
				if r.ref.Name == "" || r.ref.Key == "" {
					errs = append(errs, fmt.Sprintf("%s.%s: name and key are required", at, r.field))
					continue
				}
				// Two different mounts whose volume names collide would
				// make the pod invalid; a hash collision is unlikely but
				// must not reach the API server as a broken Deployment.
				id := webhookMountID(list.kind, s.Name, r.sec.purpose, *r.ref)
				if v := webhookVolumeName(id); volumes[v] != "" && volumes[v] != id {
					errs = append(errs, fmt.Sprintf("%s.%s: its volume name %s collides with another mount's; rename the webhook", at, r.field, v))
				} else {
					volumes[v] = id
				}
			}
		}
	}
	return errs
}

// webhookRef is a Secret key a webhook names, the field that names it and
// what it is for.
type webhookRef struct {
	field string
	ref   *thv1.SecretKeyRef
	sec   webhookSecret
}

// checkWebhookURL checks a webhook's URL as the runner will use it.
func checkWebhookURL(at string, s thv1.WebhookSpec) []string {
	u, err := url.ParseRequestURI(s.URL)
	switch {
	case err != nil:
		return []string{fmt.Sprintf("%s.url: %q is not a valid URL", at, s.URL)}
	case u.Scheme != "https" && u.Scheme != "http" || u.Host == "":
		return []string{fmt.Sprintf("%s.url: %q is not an http(s) URL with a host", at, s.URL)}
	case u.Scheme != "https" && (s.TLSConfig == nil || !s.TLSConfig.InsecureSkipVerify):
		return []string{fmt.Sprintf("%s.url: %q must use https unless tlsConfig.insecureSkipVerify is true", at, s.URL)}
	}
	return nil
}
