package virtualmcpserver

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// option dimensions of the parity table.
var (
	authKinds       = []string{"anonymous", "oidc-inline-ca", "oidc-inline-no-ca", "oidc-kubernetes"}
	podTemplates    = map[string]string{"none": "", "volumes": userVolumesTemplate}
	replicaSets     = map[string]*int32{"nil": nil, "0": ptr.To[int32](0), "3": ptr.To[int32](3)}
	serviceAccounts = map[string]*string{"own": nil, "custom": ptr.To("vmcp-sa")}
	serviceTypes    = []string{thv1.ServiceTypeClusterIP, thv1.ServiceTypeNodePort, thv1.ServiceTypeLoadBalancer}
	affinities      = []string{thv1.SessionAffinityClientIP, thv1.SessionAffinityNone}
	backendSets     = map[string][]*thv1.MCPServer{
		"none": nil,
		"two":  {newMember("zeta", testGroup), newMember("alpha", testGroup, func(s *thv1.MCPServer) { s.Spec.Transport = thv1.TransportSSE })},
	}
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
			for repName, rep := range replicaSets {
				for saName, sa := range serviceAccounts {
					for _, st := range serviceTypes {
						for _, aff := range affinities {
							for bName, backends := range backendSets {
								for cfgName, cfgRaw := range configs {
									name := fmt.Sprintf("%s/pts-%s/replicas-%s/sa-%s/%s/%s/backends-%s/config-%s", auth, ptName, repName, saName, st, aff, bName, cfgName)
									n++
									v := newVMCP("agg", func(v *thv1.VirtualMCPServer) {
										if pt != "" {
											withPodTemplate(pt)(v)
										}
										if cfgRaw != "" {
											v.Spec.Config = &runtime.RawExtension{Raw: []byte(cfgRaw)}
										}
										v.Spec.Replicas = rep
										v.Spec.ServiceAccount = sa
										v.Spec.ServiceType = st
										v.Spec.SessionAffinity = aff
									})
									in := inputs{Server: v, Backends: backends, Image: testImage}
									if cfgName == "refs" {
										withRefs(v)
										in.Refs = resolvedRefs()
									}
									switch auth {
									case "oidc-inline-ca":
										withOIDC("auth")(v)
										in.OIDC = newOIDCConfig("auth", "idp-ca")
									case "oidc-inline-no-ca":
										withOIDC("auth")(v)
										in.OIDC = newOIDCConfig("auth", "")
									case "oidc-kubernetes":
										withOIDC("auth")(v)
										in.OIDC = workloadtest.NewOIDCConfig(testNS, "auth", false, "", true)
									}
									d, err := build(in)
									if err != nil {
										t.Fatalf("%s: build: %v", name, err)
									}
									assertNoDrift(t, name, d)
									// The config volume is always there, so is the hash.
									if _, has := d.Deployment.Annotations[workload.AnnotationPodVolumesHash]; !has {
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
	t.Logf("%d combinations", n)
}

func assertNoDrift(t *testing.T, name string, d *childSet) {
	t.Helper()
	dep := workloadtest.RoundTrip(d.Deployment)
	workloadtest.DefaultDeployment(dep)
	svc := workloadtest.RoundTrip(d.Service)
	workloadtest.DefaultService(svc)
	checks := map[string][]string{
		"configmap":      workload.DiffConfigMap(d.Config, workloadtest.RoundTrip(d.Config)),
		"deployment":     workload.DiffDeploymentByVolumesHash(d.Deployment, dep),
		"deployment-raw": workload.DiffDeploymentByVolumesHash(d.Deployment, d.Deployment),
		"service":        workload.DiffService(d.Service, svc),
	}
	if d.ServiceAccount != nil {
		checks["serviceaccount"] = workload.DiffServiceAccount(d.ServiceAccount, workloadtest.RoundTrip(d.ServiceAccount))
	}
	for child, fields := range checks {
		if len(fields) != 0 {
			t.Errorf("%s: %s drifted right after build: %v", name, child, fields)
		}
	}
	if workload.DeploymentNeedsRecreate(d.Deployment, dep) {
		t.Errorf("%s: immutable field drift right after build", name)
	}
	// The annotation is the hash of exactly what the pod spec carries.
	pod := d.Deployment.Spec.Template.Spec
	if h, _ := workload.HashPodVolumes(pod.Volumes, pod.Containers[0].VolumeMounts); h != d.Volumes.Hash || d.Deployment.Annotations[workload.AnnotationPodVolumesHash] != h {
		t.Errorf("%s: annotation %q, hash of the pod's volumes %q", name, d.Deployment.Annotations[workload.AnnotationPodVolumesHash], h)
	}
}
