package wiring

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// sampleVolumes covers the source types users put in a podTemplateSpec.
func sampleVolumes() ([]corev1.Volume, []corev1.VolumeMount) {
	vols := []corev1.Volume{
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds-v1"}}},
		{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"},
			Items:                []corev1.KeyToPath{{Key: "a.yaml", Path: "a.yaml"}},
		}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			SizeLimit: ptr.To(resource.MustParse("1Gi")),
		}}},
		{Name: "bundle", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "token"}},
		}}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run/x"}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "creds", MountPath: "/creds", ReadOnly: true},
		{Name: "settings", MountPath: "/settings"},
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "bundle", MountPath: "/bundle", SubPath: "token"},
	}
	return vols, mounts
}

func mustHash(t *testing.T, vols []corev1.Volume, mounts []corev1.VolumeMount) string {
	t.Helper()
	h, err := HashPodVolumes(vols, mounts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Every change to what a volume points at or how it is mounted changes the
// hash; a value the API server defaults does not.
func TestHashPodVolumesChanges(t *testing.T) {
	bv, bm := sampleVolumes()
	base := mustHash(t, bv, bm)
	if base == "" {
		t.Fatal("hash of non-empty volumes is empty")
	}
	changes := map[string]func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount){
		"secret renamed": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[0].Secret.SecretName = "creds-v2"
			return v, m
		},
		"configmap key mapping": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[1].ConfigMap.Items[0].Path = "b.yaml"
			return v, m
		},
		"configmap key added": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[1].ConfigMap.Items = append(v[1].ConfigMap.Items, corev1.KeyToPath{Key: "b", Path: "b"})
			return v, m
		},
		"emptyDir medium": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[2].EmptyDir.Medium = corev1.StorageMediumMemory
			return v, m
		},
		"emptyDir size limit": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[2].EmptyDir.SizeLimit = ptr.To(resource.MustParse("2Gi"))
			return v, m
		},
		"emptyDir size limit removed": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[2].EmptyDir.SizeLimit = nil
			return v, m
		},
		"projected source added": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[3].Projected.Sources = append(v[3].Projected.Sources, corev1.VolumeProjection{
				Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}},
			})
			return v, m
		},
		"projected source removed": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[3].Projected.Sources = v[3].Projected.Sources[:1]
			return v, m
		},
		"projected token audience": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[3].Projected.Sources[1].ServiceAccountToken.Audience = "other"
			return v, m
		},
		"file mode": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[0].Secret.DefaultMode = ptr.To[int32](0o400)
			return v, m
		},
		"other source type by content": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[4].HostPath.Path = "/var/run/y"
			return v, m
		},
		"volume swapped for another type": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[2].VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}
			return v, m
		},
		"volume removed": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			return v[:4], m
		},
		"mount path": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			m[0].MountPath = "/secrets"
			return v, m
		},
		"mount subPath": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			m[3].SubPath = ""
			return v, m
		},
		"mount read-only": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			m[1].ReadOnly = true
			return v, m
		},
	}
	for name, change := range changes {
		v, m := change(sampleVolumes())
		if got := mustHash(t, v, m); got == base {
			t.Errorf("%s: hash unchanged", name)
		}
	}

	same := map[string]func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount){
		"defaultMode 420 set by the server": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[0].Secret.DefaultMode = ptr.To[int32](420)
			v[1].ConfigMap.DefaultMode = ptr.To[int32](420)
			v[3].Projected.DefaultMode = ptr.To[int32](420)
			return v, m
		},
		"token expiry defaulted": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[3].Projected.Sources[1].ServiceAccountToken.ExpirationSeconds = ptr.To[int64](3600)
			return v, m
		},
		"host path type defaulted": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[4].HostPath.Type = ptr.To(corev1.HostPathUnset)
			return v, m
		},
		"size limit in another unit": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			v[2].EmptyDir.SizeLimit = ptr.To(resource.MustParse("1024Mi"))
			return v, m
		},
		"order": func(v []corev1.Volume, m []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
			slices.Reverse(v)
			slices.Reverse(m)
			return v, m
		},
	}
	for name, change := range same {
		v, m := change(sampleVolumes())
		if got := mustHash(t, v, m); got != base {
			t.Errorf("%s: hash changed", name)
		}
	}
}

func TestHashPodVolumesEmptyAndCanonicalDoesNotMutate(t *testing.T) {
	if h := mustHash(t, nil, nil); h != "" {
		t.Fatalf("hash of nothing = %q, want empty (no annotation)", h)
	}
	v := corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](420)}}}
	_ = CanonicalVolume(v)
	if v.Secret.DefaultMode == nil {
		t.Fatal("CanonicalVolume changed its input")
	}
}

func TestValidatePodVolumes(t *testing.T) {
	cm := corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}
	cases := map[string]struct {
		vols   []corev1.Volume
		mounts []corev1.VolumeMount
	}{
		"unnamed":         {vols: []corev1.Volume{{VolumeSource: cm}}},
		"duplicate name":  {vols: []corev1.Volume{{Name: "a", VolumeSource: cm}, {Name: "a", VolumeSource: cm}}},
		"no source":       {vols: []corev1.Volume{{Name: "a"}}},
		"two sources":     {vols: []corev1.Volume{{Name: "a", VolumeSource: corev1.VolumeSource{ConfigMap: cm.ConfigMap, EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
		"unknown volume":  {vols: []corev1.Volume{{Name: "a", VolumeSource: cm}}, mounts: []corev1.VolumeMount{{Name: "b", MountPath: "/b"}}},
		"no mount path":   {vols: []corev1.Volume{{Name: "a", VolumeSource: cm}}, mounts: []corev1.VolumeMount{{Name: "a"}}},
		"same mount path": {vols: []corev1.Volume{{Name: "a", VolumeSource: cm}}, mounts: []corev1.VolumeMount{{Name: "a", MountPath: "/x"}, {Name: "a", MountPath: "/x"}}},
	}
	for name, tc := range cases {
		err := ValidatePodVolumes(tc.vols, tc.mounts)
		var ve *VolumeError
		if !errors.As(err, &ve) {
			t.Errorf("%s: want a VolumeError, got %v", name, err)
		}
	}
	vols, mounts := sampleVolumes()
	if err := ValidatePodVolumes(vols, mounts); err != nil {
		t.Fatalf("valid volumes rejected: %v", err)
	}
}

func TestNewPodVolumesHashesEveryVolume(t *testing.T) {
	cfg := []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}
	cfgMounts := []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}
	pv, err := NewPodVolumes(cfg, cfgMounts)
	if err != nil || pv.Hash == "" || pv.Hash != mustHash(t, cfg, cfgMounts) || len(pv.Volumes) != 1 || len(pv.Mounts) != 1 {
		t.Fatalf("config volume only: %+v, %v; want the volume and its hash", pv, err)
	}
	vols, mounts := sampleVolumes()
	all, allMounts := append(slices.Clone(cfg), vols...), append(slices.Clone(cfgMounts), mounts...)
	pv, err = NewPodVolumes(all, allMounts)
	if err != nil || pv.Hash != mustHash(t, all, allMounts) || pv.Volumes[0].Name != "cfg" || len(pv.Volumes) != 1+len(vols) {
		t.Fatalf("with more volumes: %+v, %v", pv, err)
	}
	if pv.Hash == mustHash(t, cfg, cfgMounts) {
		t.Fatal("adding volumes did not change the hash")
	}
	if _, err := NewPodVolumes(append(slices.Clone(cfg), cfg...), nil); err == nil {
		t.Fatal("duplicate volume accepted")
	}
	if pv, err := NewPodVolumes(nil, nil); err != nil || pv.Hash != "" {
		t.Fatalf("no volumes: %+v, %v; want no hash", pv, err)
	}
}
