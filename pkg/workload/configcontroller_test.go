package workload

import (
	"github.com/hivekeeper/hivekeeper/pkg/framework"

	"k8s.io/client-go/tools/cache"

	"reflect"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// recomputes reads hivekeeper_referencing_workloads_recomputes_total{result}.
func recomputes(result string) float64 {
	var m dto.Metric
	if err := metrics.ReferencingWorkloadsRecomputes.WithLabelValues(result).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// A config referenced by every workload kind lists all of them, sorted by
// kind then name, in one status patch; workloads of other configs and of
// other namespaces are not listed; DeletionBlocked is absent while nobody
// deletes the config. A second sync of the written state sends nothing.
func TestReferencingWorkloadsMixedKinds(t *testing.T) {
	cfg := config(testNS, "cfg")
	f := newFixture(t, cfg,
		vmcp(testNS, "v", "cfg"),
		server(testNS, "b", "cfg"),
		proxy(testNS, "p", "cfg"),
		server(testNS, "a", "cfg"),
		server(testNS, "other-config", "cfg2"),
		server(testNS, "no-auth", ""),
		vmcp(testNS, "anonymous", ""),
		server("team-b", "same-config-name", "cfg"),
		proxy("team-b", "same-config-name", "cfg"),
	)
	changed := recomputes(recomputeChanged)

	f.mustSync(testNS, "cfg")

	actions := f.actions()
	if len(actions) != 1 {
		t.Fatalf("expected one status patch, got %s", describe(actions))
	}
	body := patchOf(t, actions[0], "cfg", "status")
	expectJSON(t, body, map[string]any{"status": thv1.ConfigStatus{
		ObservedGeneration: 1,
		ConfigHash:         mustConfigHash(t, cfg),
		ReferencingWorkloads: []thv1.WorkloadReference{
			wl(thv1.KindMCPRemoteProxy, "p"),
			wl(thv1.KindMCPServer, "a"),
			wl(thv1.KindMCPServer, "b"),
			wl(thv1.KindVirtualMCPServer, "v"),
		},
		ReferenceCount: 4,
		Conditions:     []metav1.Condition{validCondition(1)},
	}})
	if got := recomputes(recomputeChanged) - changed; got != 1 {
		t.Errorf("changed recomputes = %v, want 1", got)
	}
	if e := f.events(); len(e) != 0 {
		t.Errorf("expected no events, got %q", e)
	}

	// Steady state: the patched status comes back through the informer.
	f.feedBack(testNS, "cfg")
	unchanged := recomputes(recomputeUnchanged)
	f.mustSync(testNS, "cfg")
	f.expectNoActions()
	if got := recomputes(recomputeUnchanged) - unchanged; got != 1 {
		t.Errorf("unchanged recomputes = %v, want 1", got)
	}
	if e := f.events(); len(e) != 0 {
		t.Errorf("expected no events at steady state, got %q", e)
	}
}

// Every sync recomputes the list in full, so removals show up as reliably
// as additions, whatever event caused the sync.
func TestReferencingWorkloadsRecomputedInFull(t *testing.T) {
	listed := func(refs ...thv1.WorkloadReference) func(*thv1.MCPOIDCConfig) {
		return func(c *thv1.MCPOIDCConfig) {
			c.Status = thv1.ConfigStatus{
				ObservedGeneration:   1,
				ConfigHash:           mustConfigHash(t, config("", "")),
				ReferencingWorkloads: refs,
				ReferenceCount:       int32(len(refs)),
				Conditions:           []metav1.Condition{validCondition(1)},
			}
		}
	}
	tests := []struct {
		name   string
		config *thv1.MCPOIDCConfig
		others []runtime.Object
		want   []thv1.WorkloadReference
		// wantBody is the exact status patch.
		wantBody string
	}{
		{
			name:     "a workload drops its reference",
			config:   config(testNS, "a", listed(wl(thv1.KindMCPServer, "s1"), wl(thv1.KindMCPServer, "s2"))),
			others:   []runtime.Object{server(testNS, "s1", "a"), server(testNS, "s2", "")},
			want:     []thv1.WorkloadReference{wl(thv1.KindMCPServer, "s1")},
			wantBody: `{"status":{"referencingWorkloads":[{"kind":"MCPServer","name":"s1"}],"referenceCount":1}}`,
		},
		{
			name:     "a workload switched from A to B: A loses it",
			config:   config(testNS, "a", listed(wl(thv1.KindVirtualMCPServer, "v"))),
			others:   []runtime.Object{vmcp(testNS, "v", "b"), config(testNS, "b")},
			want:     nil,
			wantBody: `{"status":{"referencingWorkloads":null,"referenceCount":null}}`,
		},
		{
			name:     "a workload switched from A to B: B gains it",
			config:   config(testNS, "b", listed()),
			others:   []runtime.Object{vmcp(testNS, "v", "b"), config(testNS, "a")},
			want:     []thv1.WorkloadReference{wl(thv1.KindVirtualMCPServer, "v")},
			wantBody: `{"status":{"referencingWorkloads":[{"kind":"VirtualMCPServer","name":"v"}],"referenceCount":1}}`,
		},
		{
			name:     "a referencing workload was deleted",
			config:   config(testNS, "a", listed(wl(thv1.KindMCPRemoteProxy, "gone"), wl(thv1.KindMCPRemoteProxy, "p"))),
			others:   []runtime.Object{proxy(testNS, "p", "a")},
			want:     []thv1.WorkloadReference{wl(thv1.KindMCPRemoteProxy, "p")},
			wantBody: `{"status":{"referencingWorkloads":[{"kind":"MCPRemoteProxy","name":"p"}],"referenceCount":1}}`,
		},
		{
			name:   "a workload in another namespace references a config of the same name",
			config: config(testNS, "a", listed(wl(thv1.KindMCPServer, "s"))),
			others: []runtime.Object{
				server(testNS, "s", "a"),
				server("team-b", "s2", "a"), config("team-b", "a"),
			},
			want: []thv1.WorkloadReference{wl(thv1.KindMCPServer, "s")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, append([]runtime.Object{tc.config}, tc.others...)...)
			f.mustSync(tc.config.Namespace, tc.config.Name)

			actions := f.actions()
			if tc.wantBody == "" {
				if len(actions) != 0 {
					t.Fatalf("expected no actions, got %s", describe(actions))
				}
			} else {
				if len(actions) != 1 {
					t.Fatalf("expected one status patch, got %s", describe(actions))
				}
				expectBody(t, actions[0], tc.config.Name, "status", tc.wantBody)
			}
			st := f.stored(tc.config.Namespace, tc.config.Name).Status
			if !reflect.DeepEqual(st.ReferencingWorkloads, tc.want) || st.ReferenceCount != int32(len(tc.want)) {
				t.Errorf("stored referencingWorkloads = %v (count %d), want %v", st.ReferencingWorkloads, st.ReferenceCount, tc.want)
			}
		})
	}
}

// A condition another writer put on the config survives our merge patch,
// which replaces the whole conditions array.
func TestForeignConditionSurvives(t *testing.T) {
	foreign := metav1.Condition{
		Type: "Audited", Status: metav1.ConditionTrue, Reason: "PolicyChecked", Message: "by someone else",
		ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow.Add(-time.Hour)),
	}
	cfg := config(testNS, "cfg", func(c *thv1.MCPOIDCConfig) {
		c.Status.Conditions = []metav1.Condition{foreign}
	})
	f := newFixture(t, cfg, server(testNS, "s", "cfg"))
	f.mustSync(testNS, "cfg")

	actions := f.actions()
	if len(actions) != 1 {
		t.Fatalf("expected one status patch, got %s", describe(actions))
	}
	body := patchOf(t, actions[0], "cfg", "status")
	expectJSON(t, body, map[string]any{"status": map[string]any{
		"observedGeneration":   1,
		"configHash":           mustConfigHash(t, cfg),
		"referencingWorkloads": []thv1.WorkloadReference{wl(thv1.KindMCPServer, "s")},
		"referenceCount":       1,
		"conditions":           []metav1.Condition{foreign, validCondition(1)},
	}})
	f.feedBack(testNS, "cfg")
	f.mustSync(testNS, "cfg")
	f.expectNoActions()
}

// configHash changes exactly when the spec does.
func TestConfigHash(t *testing.T) {
	a := config(testNS, "a")
	b := config(testNS, "b", func(c *thv1.MCPOIDCConfig) {
		c.Generation = 5
		c.Status.ReferenceCount = 3
		c.Labels = map[string]string{"x": "y"}
	})
	if mustConfigHash(t, a) != mustConfigHash(t, b) {
		t.Error("hash depends on something other than the spec")
	}
	c := config(testNS, "a", func(c *thv1.MCPOIDCConfig) { c.Spec.Inline.ClientID = "client" })
	if mustConfigHash(t, a) == mustConfigHash(t, c) {
		t.Error("hash did not change with the spec")
	}
	if h := mustConfigHash(t, a); len(h) != 64 {
		t.Errorf("hash %q is not hex SHA-256", h)
	}
}

// An invalid spec becomes Valid=False with the reason, one Warning event on
// the transition, and no retry: the sync returns nil and a second sync of
// the written state neither writes nor emits again.
func TestInvalidConfig(t *testing.T) {
	inline := func(issuer, jwks string, insecure bool) func(*thv1.MCPOIDCConfig) {
		return func(c *thv1.MCPOIDCConfig) {
			c.Spec.Inline = &thv1.InlineOIDCConfig{Issuer: issuer, JWKSURL: jwks, InsecureAllowHTTP: insecure}
		}
	}
	tests := []struct {
		name    string
		mutate  func(*thv1.MCPOIDCConfig)
		message string // a substring of the condition message and the event
	}{
		{"issuer without scheme", inline("idp.example.com", "", false), `spec.inline.issuer "idp.example.com": must be an absolute URL with scheme and host`},
		{"http issuer without insecureAllowHTTP", inline("http://idp.example.com", "", false), `spec.inline.issuer "http://idp.example.com": http is allowed only with insecureAllowHTTP`},
		{"garbage issuer", inline("::%zz not a url", "", false), `spec.inline.issuer "::%zz not a url": not a URL`},
		{"issuer with another scheme", inline("ftp://idp.example.com", "", true), `scheme "ftp" is not https`},
		{"issuer without host", inline("https:///path", "", false), `must be an absolute URL with scheme and host`},
		{"http jwksUrl without insecureAllowHTTP", inline("https://idp.example.com", "http://idp.example.com/jwks", false), `spec.inline.jwksUrl "http://idp.example.com/jwks": http is allowed only`},
		{"inline block missing", func(c *thv1.MCPOIDCConfig) { c.Spec.Inline = nil }, "spec.inline must be set when type is inline"},
		{"both blocks", func(c *thv1.MCPOIDCConfig) {
			c.Spec.KubernetesServiceAccount = &thv1.KubernetesServiceAccountOIDCConfig{}
		}, "spec.kubernetesServiceAccount must be absent when type is inline"},
		{"service-account block missing", func(c *thv1.MCPOIDCConfig) {
			c.Spec.Type = thv1.OIDCConfigTypeKubernetesServiceAccount
			c.Spec.Inline = nil
		}, "spec.kubernetesServiceAccount must be set"},
		{"service-account http issuer", func(c *thv1.MCPOIDCConfig) {
			c.Spec.Type = thv1.OIDCConfigTypeKubernetesServiceAccount
			c.Spec.Inline = nil
			c.Spec.KubernetesServiceAccount = &thv1.KubernetesServiceAccountOIDCConfig{Issuer: "http://kubernetes.default.svc"}
		}, `spec.kubernetesServiceAccount.issuer "http://kubernetes.default.svc": http is allowed only`},
		{"service-account jwksUrl without scheme", func(c *thv1.MCPOIDCConfig) {
			c.Spec.Type = thv1.OIDCConfigTypeKubernetesServiceAccount
			c.Spec.Inline = nil
			c.Spec.KubernetesServiceAccount = &thv1.KubernetesServiceAccountOIDCConfig{JWKSURL: "/openid/v1/jwks"}
		}, `spec.kubernetesServiceAccount.jwksUrl "/openid/v1/jwks": must be an absolute URL`},
		{"unknown type", func(c *thv1.MCPOIDCConfig) { c.Spec.Type = "saml" }, `spec.type "saml" must be`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(testNS, "cfg", tc.mutate)
			f := newFixture(t, cfg)
			if err := f.sync(testNS, "cfg"); err != nil {
				t.Fatalf("sync of an invalid config must not ask for a retry, got %v", err)
			}
			if f.c.Queue.Len() != 0 {
				t.Fatalf("invalid config was requeued")
			}
			actions := f.actions()
			if len(actions) != 1 {
				t.Fatalf("expected one status patch, got %s", describe(actions))
			}
			patchOf(t, actions[0], "cfg", "status")
			st := f.stored(testNS, "cfg").Status
			cond := meta.FindStatusCondition(st.Conditions, thv1.ConditionValid)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != thv1.ReasonConfigInvalid || cond.ObservedGeneration != 1 {
				t.Fatalf("Valid condition = %+v, want False/%s", cond, thv1.ReasonConfigInvalid)
			}
			if !strings.Contains(cond.Message, tc.message) {
				t.Errorf("message %q does not contain %q", cond.Message, tc.message)
			}
			events := f.events()
			if len(events) != 1 || !strings.HasPrefix(events[0], "Warning "+thv1.ReasonConfigInvalid+" ") || !strings.Contains(events[0], tc.message) {
				t.Fatalf("expected one Warning %s event naming the reason, got %q", thv1.ReasonConfigInvalid, events)
			}

			f.feedBack(testNS, "cfg")
			if err := f.sync(testNS, "cfg"); err != nil {
				t.Fatal(err)
			}
			f.expectNoActions()
			if e := f.events(); len(e) != 0 {
				t.Errorf("event repeated without a transition: %q", e)
			}
		})
	}
}

// Valid specs, including http endpoints that insecureAllowHTTP permits and
// a service-account block left to its defaults.
func TestValidConfigs(t *testing.T) {
	tests := map[string]thv1.MCPOIDCConfigSpec{
		"inline https": {Type: thv1.OIDCConfigTypeInline, Inline: &thv1.InlineOIDCConfig{Issuer: "https://idp.example.com/realms/x"}},
		"inline http with insecureAllowHTTP": {Type: thv1.OIDCConfigTypeInline, Inline: &thv1.InlineOIDCConfig{
			Issuer: "http://keycloak.dev.svc:8080/realms/x", JWKSURL: "http://keycloak.dev.svc:8080/certs", InsecureAllowHTTP: true,
		}},
		"service account defaults": {Type: thv1.OIDCConfigTypeKubernetesServiceAccount, KubernetesServiceAccount: &thv1.KubernetesServiceAccountOIDCConfig{}},
		"service account explicit": {Type: thv1.OIDCConfigTypeKubernetesServiceAccount, KubernetesServiceAccount: &thv1.KubernetesServiceAccountOIDCConfig{
			Issuer: "https://kubernetes.default.svc", JWKSURL: "https://kubernetes.default.svc/openid/v1/jwks",
		}},
	}
	for name, spec := range tests {
		t.Run(name, func(t *testing.T) {
			if errs := wiring.ValidateOIDCConfig(&thv1.MCPOIDCConfig{Spec: spec}); len(errs) != 0 {
				t.Errorf("valid spec rejected: %q", errs)
			}
		})
	}
}

// A config that turns valid again gets Valid=True with a new transition
// time, and no Warning.
func TestInvalidConfigRecovers(t *testing.T) {
	cfg := config(testNS, "cfg", func(c *thv1.MCPOIDCConfig) {
		c.Generation = 2
		c.Status.Conditions = []metav1.Condition{{
			Type: thv1.ConditionValid, Status: metav1.ConditionFalse, Reason: thv1.ReasonConfigInvalid,
			Message: "old", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow.Add(-time.Hour)),
		}}
	})
	f := newFixture(t, cfg)
	f.mustSync(testNS, "cfg")
	if a := f.actions(); len(a) != 1 {
		t.Fatalf("expected one status patch, got %s", describe(a))
	}
	cond := meta.FindStatusCondition(f.stored(testNS, "cfg").Status.Conditions, thv1.ConditionValid)
	if !equality.Semantic.DeepEqual(*cond, validCondition(2)) {
		t.Errorf("Valid = %+v, want %+v", *cond, validCondition(2))
	}
	// ToolHive's recovery event.
	if e := f.events(); len(e) != 1 || e[0] != "Normal ConfigValid spec validation passed" {
		t.Errorf("expected one Normal ConfigValid event, got %q", e)
	}
}

// The finalizer is added with a merge patch that carries the
// resourceVersion as a lock and nothing but the finalizers: a stale cache
// cannot drop another writer's finalizer, and no spec field is rewritten.
func TestFinalizerAdded(t *testing.T) {
	tests := []struct {
		name     string
		existing []string
		wantBody string
	}{
		{"no finalizers yet", nil,
			`{"metadata":{"finalizers":["mcpoidcconfig.toolhive.stacklok.dev/finalizer"],"resourceVersion":"7"}}`},
		{"another writer's finalizer is kept", []string{"example.com/keep"},
			`{"metadata":{"finalizers":["example.com/keep","mcpoidcconfig.toolhive.stacklok.dev/finalizer"],"resourceVersion":"7"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(testNS, "cfg", func(c *thv1.MCPOIDCConfig) { c.Finalizers = tc.existing })
			f := newFixture(t, cfg, server(testNS, "s", "cfg"))
			f.mustSync(testNS, "cfg")

			actions := f.actions()
			if len(actions) != 2 {
				t.Fatalf("expected a finalizer patch and a status patch, got %s", describe(actions))
			}
			expectBody(t, actions[0], "cfg", "", tc.wantBody)
			patchOf(t, actions[1], "cfg", "status")

			f.feedBack(testNS, "cfg")
			f.mustSync(testNS, "cfg")
			f.expectNoActions()
		})
	}
}

// While workloads reference a config being deleted, DeletionBlocked=True
// names them and one Warning is emitted; the finalizer is held. Losing one
// referrer updates the message without a new Warning. Losing the last one
// releases the finalizer at the next sync, with a locked patch that carries
// nothing of the spec, and no status write for an object about to vanish.
func TestDeletionBlockedLifecycle(t *testing.T) {
	deleting := func(c *thv1.MCPOIDCConfig) {
		ts := metav1.NewTime(testNow.Add(-time.Minute))
		c.DeletionTimestamp = &ts
	}
	cfg := config(testNS, "cfg", deleting)
	s, v := server(testNS, "a", "cfg"), vmcp(testNS, "v", "cfg")
	f := newFixture(t, cfg, s, v)

	// Referenced by two workloads: blocked.
	f.mustSync(testNS, "cfg")
	actions := f.actions()
	if len(actions) != 1 {
		t.Fatalf("expected only a status patch while blocked, got %s", describe(actions))
	}
	body := patchOf(t, actions[0], "cfg", "status")
	blocked := metav1.Condition{
		Type: thv1.ConditionDeletionBlocked, Status: metav1.ConditionTrue, Reason: thv1.ReasonReferencedByWorkloads,
		Message: "referenced by MCPServer/a, VirtualMCPServer/v", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow),
	}
	expectJSON(t, body, map[string]any{"status": thv1.ConfigStatus{
		ObservedGeneration:   1,
		ConfigHash:           mustConfigHash(t, cfg),
		ReferencingWorkloads: []thv1.WorkloadReference{wl(thv1.KindMCPServer, "a"), wl(thv1.KindVirtualMCPServer, "v")},
		ReferenceCount:       2,
		Conditions:           []metav1.Condition{validCondition(1), blocked},
	}})
	events := f.events()
	if len(events) != 1 || events[0] != "Warning DeletionBlocked Deletion blocked: referenced by MCPServer/a, VirtualMCPServer/v" {
		t.Fatalf("expected one DeletionBlocked Warning, got %q", events)
	}

	// Nothing changed: no write, no second Warning.
	f.feedBack(testNS, "cfg")
	f.mustSync(testNS, "cfg")
	f.expectNoActions()

	// One referrer goes: the message follows, the Warning does not repeat.
	f.unseed(v)
	f.mustSync(testNS, "cfg")
	actions = f.actions()
	if len(actions) != 1 {
		t.Fatalf("expected one status patch, got %s", describe(actions))
	}
	fed := f.feedBack(testNS, "cfg")
	cond := meta.FindStatusCondition(fed.Status.Conditions, thv1.ConditionDeletionBlocked)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Message != "referenced by MCPServer/a" || !cond.LastTransitionTime.Time.Equal(testNow) {
		t.Fatalf("DeletionBlocked = %+v", cond)
	}
	if e := f.events(); len(e) != 0 {
		t.Errorf("Warning repeated without a transition: %q", e)
	}

	// The last referrer goes: the finalizer is released, nothing else.
	f.unseed(s)
	f.mustSync(testNS, "cfg")
	actions = f.actions()
	if len(actions) != 1 {
		t.Fatalf("expected only the finalizer removal, got %s", describe(actions))
	}
	expectBody(t, actions[0], "cfg", "", `{"metadata":{"finalizers":null,"resourceVersion":"`+fed.ResourceVersion+`"}}`)
	if e := f.events(); len(e) != 0 {
		t.Errorf("unexpected events: %q", e)
	}
}

// An unreferenced config being deleted is released at once. When another
// writer's finalizer keeps the object alive, ours is removed with that one
// kept, and the status stops claiming a blocked deletion.
func TestDeletionReleased(t *testing.T) {
	tests := []struct {
		name       string
		finalizers []string
		wantBody   string
		wantStatus bool
	}{
		{"only our finalizer", []string{thv1.MCPOIDCConfigFinalizer},
			`{"metadata":{"finalizers":null,"resourceVersion":"7"}}`, false},
		{"another writer's finalizer stays", []string{"example.com/keep", thv1.MCPOIDCConfigFinalizer},
			`{"metadata":{"finalizers":["example.com/keep"],"resourceVersion":"7"}}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(testNS, "cfg", func(c *thv1.MCPOIDCConfig) {
				ts := metav1.NewTime(testNow)
				c.DeletionTimestamp = &ts
				c.Finalizers = tc.finalizers
				c.Status = thv1.ConfigStatus{
					ObservedGeneration:   1,
					ConfigHash:           mustConfigHash(t, config("", "")),
					ReferencingWorkloads: []thv1.WorkloadReference{wl(thv1.KindMCPServer, "gone")},
					ReferenceCount:       1,
					Conditions: []metav1.Condition{validCondition(1), {
						Type: thv1.ConditionDeletionBlocked, Status: metav1.ConditionTrue, Reason: thv1.ReasonReferencedByWorkloads,
						Message: "referenced by MCPServer/gone", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow),
					}},
				}
			})
			f := newFixture(t, cfg, server(testNS, "unrelated", "other"))
			f.mustSync(testNS, "cfg")

			actions := f.actions()
			want := 1
			if tc.wantStatus {
				want = 2
			}
			if len(actions) != want {
				t.Fatalf("expected %d actions, got %s", want, describe(actions))
			}
			expectBody(t, actions[0], "cfg", "", tc.wantBody)
			if tc.wantStatus {
				body := patchOf(t, actions[1], "cfg", "status")
				expectJSON(t, body, map[string]any{"status": map[string]any{
					"referencingWorkloads": nil,
					"referenceCount":       nil,
					"conditions":           []metav1.Condition{validCondition(1)},
				}})
			}
			if e := f.events(); len(e) != 0 {
				t.Errorf("unexpected events: %q", e)
			}
		})
	}
}

// A config that is gone (deleted between the event and the sync) is
// nothing to do.
func TestConfigNotFound(t *testing.T) {
	f := newFixture(t, server(testNS, "s", "cfg"))
	f.mustSync(testNS, "cfg")
	f.expectNoActions()
}

// Without the reference index the recompute cannot run: the sync returns
// the error for a retry, counts it, and writes nothing rather than an empty
// list.
func TestRecomputeErrorIsRetried(t *testing.T) {
	cfg := config(testNS, "cfg")
	client := fake.NewSimpleClientset(cfg)
	factory := informers.NewSharedInformerFactory(client, 0) // no index.AddToInformers
	c, err := NewConfigController(&framework.Deps{Toolhive: client, Scopes: []framework.Scope{{Toolhive: factory}}, Recorder: record.NewFakeRecorder(10), Clock: testingclock.NewFakeClock(testNow)}, "mcpoidcconfig", OIDCConfigs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Queue.ShutDown)
	if err := factory.Toolhive().V1beta1().MCPOIDCConfigs().Informer().GetIndexer().Add(cfg); err != nil {
		t.Fatal(err)
	}
	before := recomputes(recomputeError)
	_, ctx := ktesting.NewTestContext(t)
	if err := c.sync(ctx, cache.NewObjectName(testNS, "cfg")); err == nil {
		t.Fatal("sync without the reference index succeeded")
	}
	if got := recomputes(recomputeError) - before; got != 1 {
		t.Errorf("error recomputes = %v, want 1", got)
	}
	if a := client.Actions(); len(a) != 0 {
		t.Errorf("expected no actions, got %s", describe(a))
	}
}

// Each kind's Valid condition carries ToolHive v0.63.0's reasons for that
// kind: ConfigValid/ConfigInvalid for MCPOIDCConfig and MCPAuthzConfig,
// ValidationSucceeded/ValidationFailed for MCPToolConfig,
// MCPTelemetryConfig, MCPWebhookConfig and MCPExternalAuthConfig (and
// for the MCPExternalAuthConfig read as an authServerRef).
func TestConfigKindsValidReasons(t *testing.T) {
	for _, tc := range []struct {
		kind                 string
		valid, invalid       string
		gotValid, gotInvalid string
	}{
		{thv1.KindMCPOIDCConfig, "ConfigValid", "ConfigInvalid", OIDCConfigs.ValidReason, OIDCConfigs.InvalidReason},
		{thv1.KindMCPAuthzConfig, "ConfigValid", "ConfigInvalid", AuthzConfigs.ValidReason, AuthzConfigs.InvalidReason},
		{thv1.KindMCPToolConfig, "ValidationSucceeded", "ValidationFailed", ToolConfigs.ValidReason, ToolConfigs.InvalidReason},
		{thv1.KindMCPTelemetryConfig, "ValidationSucceeded", "ValidationFailed", TelemetryConfigs.ValidReason, TelemetryConfigs.InvalidReason},
		{thv1.KindMCPWebhookConfig, "ValidationSucceeded", "ValidationFailed", WebhookConfigs.ValidReason, WebhookConfigs.InvalidReason},
		{thv1.KindMCPExternalAuthConfig, "ValidationSucceeded", "ValidationFailed", ExternalAuthConfigs.ValidReason, ExternalAuthConfigs.InvalidReason},
		{"authServerRef", "ValidationSucceeded", "ValidationFailed", AuthServerConfigs.ValidReason, AuthServerConfigs.InvalidReason},
	} {
		if tc.gotValid == "" {
			tc.gotValid, tc.gotInvalid = thv1.ReasonConfigValid, thv1.ReasonConfigInvalid
		}
		if tc.gotValid != tc.valid || tc.gotInvalid != tc.invalid {
			t.Errorf("%s: Valid reasons %s/%s, want ToolHive's %s/%s", tc.kind, tc.gotValid, tc.gotInvalid, tc.valid, tc.invalid)
		}
	}
}
