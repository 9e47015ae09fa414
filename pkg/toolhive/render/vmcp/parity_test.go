package vmcp

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/drift/drifttest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// option dimensions of the parity table.
var (
	authKinds    = []string{"anonymous", "oidc-inline-ca", "oidc-inline-no-ca", "oidc-kubernetes", "oidc-authserver"}
	podTemplates = map[string]string{"none": "", "volumes": userVolumesTemplate, "full": fullTemplate}
	podExtras    = map[string]func(*thv1.VirtualMCPServer){
		"none": func(*thv1.VirtualMCPServer) {},
		// Verified with a CA bundle: a Secret volume the config names.
		"redis-tls": func(v *thv1.VirtualMCPServer) {
			withRedis(v)
			v.Spec.SessionStorage.TLS = &thv1.RedisTLSConfig{CACertSecretRef: &thv1.SecretKeyRef{Name: "redis-ca", Key: "ca.crt"}}
		},
		// With parityDefaultRedis, which a memory provider falls back to.
		"memory": func(v *thv1.VirtualMCPServer) {
			v.Spec.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderMemory}
		},
		"pullsecrets": func(v *thv1.VirtualMCPServer) {
			v.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "a"}, {Name: "b"}}
		},
	}
	replicaSets     = map[string]*int32{"nil": nil, "0": ptr.To[int32](0), "3": ptr.To[int32](3)}
	serviceAccounts = map[string]*string{"own": nil, "custom": ptr.To("vmcp-sa")}
	serviceTypes    = []string{thv1.ServiceTypeClusterIP, thv1.ServiceTypeNodePort, thv1.ServiceTypeLoadBalancer}
	affinities      = []string{thv1.SessionAffinityClientIP, thv1.SessionAffinityNone}
	backendSets     = map[string][]any{
		"none": nil,
		"two":  {newMember("zeta", testGroup), newMember("alpha", testGroup, func(s *thv1.MCPServer) { s.Spec.Transport = thv1.TransportSSE })},
		"mixed": {newMember("zeta", testGroup), newRemoteMember("remote", testGroup),
			newRemoteMember("remote-sse", testGroup, func(p *thv1.MCPRemoteProxy) { p.Spec.Transport = thv1.TransportSSE })},
		// MCPServerEntries (CA bundle volume, header variables) and
		// members with their own MCPExternalAuthConfig (secret variables),
		// one of which cannot be built and drops its backend.
		"entries": {newEntry("far", testGroup, withEntryExtras), newEntry("near", testGroup),
			newMember("own", testGroup, withAuthRef("member-hdr")), newMember("dropped", testGroup, withAuthRef("member-missing"))},
	}
	// parityAuthServerJSON adds to authServerJSON what ToolHive v0.63.0
	// added to the server: a TLS listener (a projected volume), a
	// registration limit, a client cap and an upstream registered at run
	// time (its initial access token's variable).
	parityAuthServerJSON = strings.TrimSuffix(authServerJSON, "]}") + `,{"name":"dcr","type":"oidc","oidcConfig":{"issuerUrl":"https://dcr.example.com",` +
		`"dcrConfig":{"discoveryUrl":"https://dcr.example.com/.well-known/openid-configuration","initialAccessTokenRef":{"name":"dcr","key":"iat"}}}}],` +
		`"tlsListener":{"certificateSecretRef":{"name":"tls","key":"tls.crt"},"privateKeySecretRef":{"name":"tls","key":"tls.key"}},` +
		`"registrationRateLimit":{"maxTokens":5,"refillPeriod":"1m"},"storage":{"type":"memory","maxDCRClients":100}}`
	parityDefaultRedis = &wiring.DefaultRedis{Addr: "redis.infra:6379", SecretName: "redis", SecretKey: "redis-password",
		TLS: &thv1.RedisTLSConfig{CACertSecretRef: &thv1.SecretKeyRef{Name: "redis-ca", Key: "ca.crt"}}}
	// "refs" is withRefs: every reference config.yaml is built from, with
	// secret env variables and the telemetry CA volume.
	configs = map[string]string{"none": "", "passthrough": `{"aggregation":{"conflictResolution":"prefix"},"operational":{"maxDataSize":9007199254740993}}`,
		"refs": ""}
)

// TestBuildDriftParity is invariant 3: for every option combination, the
// built children fed back as live — after a JSON round trip and the API
// server's defaults — show no drift under the comparators the controller
// uses, the Deployment's volumes included (through their hash).
func TestBuildDriftParity(t *testing.T) {
	n := 0
	for _, auth := range authKinds {
		for ptName, pt := range podTemplates {
			for exName, extra := range podExtras {
				for repName, rep := range replicaSets {
					for saName, sa := range serviceAccounts {
						for _, st := range serviceTypes {
							for _, aff := range affinities {
								for bName, backends := range backendSets {
									for cfgName, cfgRaw := range configs {
										name := fmt.Sprintf("%s/pts-%s/%s/replicas-%s/sa-%s/%s/%s/backends-%s/config-%s", auth, ptName, exName, repName, saName, st, aff, bName, cfgName)
										n++
										v := newVMCP("agg", func(v *thv1.VirtualMCPServer) {
											if pt != "" {
												withPodTemplate(pt)(v)
											}
											if cfgRaw != "" {
												v.Spec.Config = toolhivetest.Decode[thv1.VirtualMCPConfig](cfgRaw)
											}
											v.Spec.Replicas = rep
											v.Spec.ServiceAccount = sa
											v.Spec.ServiceType = st
											v.Spec.SessionAffinity = aff
											extra(v)
										})
										in := Input{Members: backends, Image: testImage}
										// Each release's output, paired with the
										// session affinity: the newest with its
										// usage-metrics variable and TLS listener port.
										if aff == thv1.SessionAffinityNone {
											in.Release = release.Newest()
											in.UsageMetrics = wiring.UsageMetrics{AnonymousID: "0b6f3c5e-7d0a-4c55-9a51-8d1f0e2b6c11"}
										}
										if exName == "memory" {
											in.DefaultRedis = parityDefaultRedis
										}
										if cfgName == "refs" {
											withRefs(v)
											r := resolvedRefs()
											in.Tools, in.Authz, in.Telemetry, in.ExtAuth = r.Tools, r.Authz, r.Telemetry, r.ExtAuth
										}
										in.MemberAuth = map[string]*thv1.MCPExternalAuthConfig{"member-hdr": newExtAuth("member-hdr", headerInjection)}
										switch auth {
										case "oidc-inline-ca":
											withOIDC("auth")(v)
											in.OIDC = newOIDCConfig("auth", "idp-ca")
										case "oidc-inline-no-ca":
											withOIDC("auth")(v)
											in.OIDC = newOIDCConfig("auth", "")
										case "oidc-kubernetes":
											withOIDC("auth")(v)
											in.OIDC = toolhivetest.NewOIDCConfig(testNS, "auth", false, "", true)
										case "oidc-authserver":
											// Its Secret volumes and variables beside the
											// others; authorization by reference kept.
											authz := v.Spec.IncomingAuth.AuthzConfigRef
											withAuthServer(parityAuthServerJSON)(v)
											v.Spec.IncomingAuth.AuthzConfigRef = authz
											in.OIDC = newOIDCConfig("auth", "idp-ca")
										}
										d, err := Build(v, in)
										if err != nil {
											t.Fatalf("%s: build: %v", name, err)
										}
										assertNoDrift(t, name, d)
										// The config volume is always there, so is the hash.
										if _, has := d.Deployment.Annotations[naming.AnnotationPodVolumesHash]; !has {
											t.Errorf("%s: no pod volumes hash annotation", name)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

func assertNoDrift(t *testing.T, name string, d *Output) {
	t.Helper()
	dep := drifttest.RoundTrip(d.Deployment)
	drifttest.DefaultDeployment(dep)
	svc := drifttest.RoundTrip(d.Service)
	drifttest.DefaultService(svc)
	checks := map[string][]string{
		"configmap":      drift.DiffConfigMap(d.Config, drifttest.RoundTrip(d.Config)),
		"deployment":     drift.DiffDeploymentWithPodTemplateByVolumesHash(d.Deployment, dep),
		"deployment-raw": drift.DiffDeploymentWithPodTemplateByVolumesHash(d.Deployment, d.Deployment),
		"service":        drift.DiffService(d.Service, svc),
	}
	if d.ServiceAccount != nil {
		checks["serviceaccount"] = drift.DiffServiceAccount(d.ServiceAccount, drifttest.RoundTrip(d.ServiceAccount))
	}
	for child, fields := range checks {
		if len(fields) != 0 {
			t.Errorf("%s: %s drifted right after build: %v", name, child, fields)
		}
	}
	if drift.DeploymentNeedsRecreate(d.Deployment, dep) {
		t.Errorf("%s: immutable field drift right after build", name)
	}
	// The annotation is the hash of exactly the volumes hivekeeper built,
	// which the pod spec carries first.
	pod := d.Deployment.Spec.Template.Spec
	built := func(name string) bool {
		return slices.ContainsFunc(d.Volumes.Volumes, func(v corev1.Volume) bool { return v.Name == name })
	}
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	for _, v := range pod.Volumes {
		if built(v.Name) {
			vols = append(vols, v)
		}
	}
	for _, m := range pod.Containers[0].VolumeMounts {
		if built(m.Name) && m.MountPath != "" && slices.ContainsFunc(d.Volumes.Mounts, func(b corev1.VolumeMount) bool { return b.MountPath == m.MountPath }) {
			mounts = append(mounts, m)
		}
	}
	if h, _ := podVolumesHash(vols, mounts); h != d.Volumes.Hash || d.Deployment.Annotations[naming.AnnotationPodVolumesHash] != h {
		t.Errorf("%s: annotation %q, hash of the pod's built volumes %q", name, d.Deployment.Annotations[naming.AnnotationPodVolumesHash], h)
	}
}
