package proxy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// Bits of FuzzBuild's flags argument: which optional parts of the spec are
// set. Bits 5 and 6 pick the OIDC configuration.
const (
	fuzzMCPPort = 1 << iota
	fuzzReplicas
	fuzzServiceAccount
	fuzzOverrides
	fuzzSecrets
	fuzzOIDCShift = iota
)

// FuzzBuild feeds BuildMCPServer specs the API server's schema might or
// might not have let through (objects stored before a schema change, a
// schema bug, a client that bypasses validation): random images,
// transports, ports, env names and values, args, secrets, quantities, raw
// pod template bytes and override maps. Build must not panic; any error
// must be an *wiring.InvalidSpecError (a condition, never a retry loop); and what
// it builds must show no drift against itself, also after the JSON round
// trip and defaulting of the API server, or the controller would patch it
// forever.
//
// go test runs the seeds in testdata/fuzz/FuzzBuild; explore with
//
//	go test -run='^$' -fuzz=FuzzBuild -fuzztime=60s ./pkg/toolhive/render/proxy/
func FuzzBuild(f *testing.F) {
	f.Add("fetch", "ghcr.io/example/fetch:1.0", "stdio", "", int32(8080), int32(0), int32(0), uint8(0),
		"LOG_LEVEL", "debug", "--verbose", "", "", "", "100m", "128Mi", []byte(nil), "", "", "ClientIP", "", int64(1))
	f.Fuzz(func(t *testing.T, name, image, transport, proxyMode string, proxyPort, mcpPort, replicas int32, flags uint8,
		envName, envValue, arg, secretName, secretKey, secretTarget, cpu, memory string, podTemplate []byte,
		overrideKey, overrideValue, sessionAffinity, serviceAccount string, generation int64) {
		// The API server's JSON decoder turns invalid UTF-8 into U+FFFD, so
		// no string Build sees can hold it; without this every such input
		// would "drift" after the round trip below for a reason no cluster
		// can produce. The raw pod template stays raw.
		for _, p := range []*string{&name, &image, &transport, &proxyMode, &envName, &envValue, &arg, &secretName,
			&secretKey, &secretTarget, &cpu, &memory, &overrideKey, &overrideValue, &sessionAffinity, &serviceAccount} {
			*p = strings.ToValidUTF8(*p, "\uFFFD")
		}
		s := newServer(name, func(s *thv1.MCPServer) {
			s.Generation = generation
			s.Spec = thv1.MCPServerSpec{
				Image:           image,
				Transport:       transport,
				ProxyMode:       proxyMode,
				ProxyPort:       proxyPort,
				Args:            []string{arg},
				Env:             []thv1.NameValue{{Name: envName, Value: envValue}},
				Resources:       thv1.ResourceRequirements{Limits: thv1.ResourceList{CPU: cpu, Memory: memory}, Requests: thv1.ResourceList{CPU: cpu}},
				SessionAffinity: sessionAffinity,
			}
			if flags&fuzzMCPPort != 0 {
				s.Spec.MCPPort = &mcpPort
			}
			if flags&fuzzReplicas != 0 {
				s.Spec.Replicas = &replicas
			}
			if flags&fuzzServiceAccount != 0 {
				s.Spec.ServiceAccount = &serviceAccount
			}
			if podTemplate != nil {
				s.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: podTemplate}
			}
			if flags&fuzzSecrets != 0 {
				s.Spec.Secrets = []thv1.SecretRef{
					{Name: secretName, Key: secretKey, TargetEnvName: secretTarget},
					{Name: secretName + "-2", Key: secretKey},
				}
			}
			if flags&fuzzOverrides != 0 {
				m := map[string]string{overrideKey: overrideValue}
				s.Spec.ResourceOverrides = &thv1.ResourceOverrides{
					ProxyDeployment: &thv1.ProxyDeploymentOverrides{
						ResourceMetadataOverrides:    thv1.ResourceMetadataOverrides{Labels: m, Annotations: m},
						PodTemplateMetadataOverrides: &thv1.ResourceMetadataOverrides{Labels: m, Annotations: m},
						Env:                          []thv1.NameValue{{Name: overrideKey, Value: overrideValue}},
						ImagePullSecrets:             []corev1.LocalObjectReference{{Name: overrideValue}},
					},
					ProxyService: &thv1.ResourceMetadataOverrides{Labels: m, Annotations: m},
				}
			}
		})
		var cfg *thv1.MCPOIDCConfig
		switch (flags >> fuzzOIDCShift) & 3 {
		case 1, 2:
			cfg = newOIDCConfig("auth", (flags>>fuzzOIDCShift)&3 == 1, true)
			s.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: overrideValue, Scopes: []string{arg}, ResourceURL: image}
		case 3:
			// A reference whose config is not resolved (not found, not
			// valid): Build gets no config.
			s.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "missing", Audience: "mcp"}
		}
		in := Input{OIDC: cfg, RunnerImage: "runner:test"}
		before := s.DeepCopy()

		d, err := BuildMCPServer(s, in)
		if !equality.Semantic.DeepEqual(before, s) {
			t.Fatalf("Build modified its input server")
		}
		if err != nil {
			var invalid *wiring.InvalidSpecError
			if !errors.As(err, &invalid) {
				t.Fatalf("Build returned %T %q, want an *wiring.InvalidSpecError", err, err)
			}
			if invalid.Condition == "" || invalid.Reason == "" || invalid.Message == "" {
				t.Fatalf("InvalidSpecError without condition, reason or message: %+v", invalid)
			}
			return
		}

		// Pure: the same inputs give the same children.
		again, err := BuildMCPServer(s, in)
		if err != nil {
			t.Fatalf("second Build failed where the first succeeded: %v", err)
		}
		if !equality.Semantic.DeepEqual(d, again) {
			t.Fatalf("Build is not deterministic")
		}

		// Drift parity: every child against itself, and against what the
		// API server would store.
		for child, fields := range map[string][]string{
			"deployment":  drift.DiffDeployment(d.Deployment, d.Deployment),
			"service":     drift.DiffService(d.Service, d.Service),
			"configmap":   drift.DiffConfigMap(d.RunConfig, d.RunConfig),
			"rolebinding": drift.DiffRoleBinding(d.RunnerRoleBinding, d.RunnerRoleBinding),
		} {
			if len(fields) != 0 {
				t.Errorf("%s drifts against itself: %v", child, fields)
			}
		}
		assertMCPServerNoDrift(t, "fuzz", d)

		// The RunConfig is JSON the runner can read, and the pod template
		// always carries its checksum, whatever the overrides say.
		var rc map[string]any
		if err := json.Unmarshal([]byte(d.RunConfig.Data[schema.Key]), &rc); err != nil {
			t.Errorf("RunConfig is not JSON: %v", err)
		}
		// "Env keys containing =, CR or LF are invalid input": a build that
		// succeeds must not hand the API server a container env name it
		// rejects (the Deployment create would fail and be retried with no
		// condition to tell the user why).
		for _, c := range d.Deployment.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if err := schema.ValidateEnvName(e.Name); err != nil {
					t.Errorf("container %s env: %v; want an InvalidSpecError from Build", c.Name, err)
				}
			}
		}
		sum := d.RunConfig.Annotations[schema.ChecksumAnnotation]
		if got := d.Deployment.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum]; sum == "" || got != sum {
			t.Errorf("pod template checksum %q, want the RunConfig's %q", got, sum)
		}
	})
}
