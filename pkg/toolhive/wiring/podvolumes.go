package wiring

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// defaultVolumeMode is the API server's default file mode of ConfigMap,
// Secret, projected and downward API volumes (0644).
const defaultVolumeMode int32 = 0o644

// defaultTokenExpirationSeconds is the API server's default expiry of a
// projected service-account token.
const defaultTokenExpirationSeconds int64 = 3600

// PodVolumes are a pod's volumes and the main container's mounts, resolved
// once per sync. The same value feeds the pod spec and the hash annotation,
// so the two can never disagree.
type PodVolumes struct {
	// Volumes of the pod, fixed ones first, in build order.
	Volumes []corev1.Volume
	// Mounts of the main container, in build order.
	Mounts []corev1.VolumeMount
	// Hash is HashPodVolumes of the resolved volumes and mounts; "" when
	// there are none, which means "no annotation".
	Hash string
}

// VolumeError is a volume or mount that cannot be used as given. It is a
// user error: the caller reports it and leaves the live pod alone rather
// than roll out a pod with some of its volumes missing.
type VolumeError struct {
	// Volume is the name of the offending volume or mount ("" when unnamed).
	Volume string
	// Reason says what is wrong.
	Reason string
}

func (e *VolumeError) Error() string {
	if e.Volume == "" {
		return "volume: " + e.Reason
	}
	return fmt.Sprintf("volume %q: %s", e.Volume, e.Reason)
}

// NewPodVolumes validates a pod's volumes and mounts and hashes all of
// them, the workload's own config volume included: ToolHive's operator
// hashes every volume of the pod, so the annotation is present on every
// Deployment that has a volume, and a change to any of them is drift.
func NewPodVolumes(vols []corev1.Volume, mounts []corev1.VolumeMount) (PodVolumes, error) {
	if err := ValidatePodVolumes(vols, mounts); err != nil {
		return PodVolumes{}, err
	}
	hash, err := HashPodVolumes(vols, mounts)
	if err != nil {
		return PodVolumes{}, err
	}
	return PodVolumes{Volumes: vols, Mounts: mounts, Hash: hash}, nil
}

// ValidatePodVolumes checks what the API server would otherwise reject
// only after hivekeeper had already decided to roll the pod: every volume
// has a unique name and exactly one source, and every mount names a volume
// of the pod at a path no other mount uses.
func ValidatePodVolumes(vols []corev1.Volume, mounts []corev1.VolumeMount) error {
	names := make(map[string]bool, len(vols))
	for _, v := range vols {
		if v.Name == "" {
			return &VolumeError{Reason: "name is empty"}
		}
		if names[v.Name] {
			return &VolumeError{Volume: v.Name, Reason: "name is used by more than one volume"}
		}
		names[v.Name] = true
		if n := countSources(&v.VolumeSource); n != 1 {
			return &VolumeError{Volume: v.Name, Reason: fmt.Sprintf("has %d sources, want exactly one", n)}
		}
	}
	paths := make(map[string]bool, len(mounts))
	for _, m := range mounts {
		if !names[m.Name] {
			return &VolumeError{Volume: m.Name, Reason: "is mounted but no volume has that name"}
		}
		if m.MountPath == "" {
			return &VolumeError{Volume: m.Name, Reason: "mount has no mountPath"}
		}
		if paths[m.MountPath] {
			return &VolumeError{Volume: m.Name, Reason: fmt.Sprintf("mountPath %s is used by more than one mount", m.MountPath)}
		}
		paths[m.MountPath] = true
	}
	return nil
}

// countSources counts the source fields that are set. It walks the struct
// by reflection so that a source type added to the API is counted without
// a change here.
func countSources(src *corev1.VolumeSource) int {
	n := 0
	v := reflect.ValueOf(src).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

// HashPodVolumes is the hex SHA-256 of a canonical encoding of volumes and
// mounts, or "" when both are empty. Volumes are sorted by name and mounts
// by name, mountPath and subPath, so build order does not matter. Each
// volume is encoded by its full content after CanonicalVolume, which
// covers every source type — a field the encoding did not know would still
// be hashed — while values the API server defaults hash the same whether
// they are set explicitly or not.
func HashPodVolumes(vols []corev1.Volume, mounts []corev1.VolumeMount) (string, error) {
	if len(vols) == 0 && len(mounts) == 0 {
		return "", nil
	}
	type entry struct {
		name, path, subPath string
		enc                 []byte
	}
	encode := func(v any) ([]byte, error) {
		// encoding/json writes struct fields in declaration order and map
		// keys sorted, so equal values give equal bytes.
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encoding pod volumes: %w", err)
		}
		return b, nil
	}
	ve := make([]entry, len(vols))
	for i := range vols {
		b, err := encode(CanonicalVolume(vols[i]))
		if err != nil {
			return "", err
		}
		ve[i] = entry{name: vols[i].Name, enc: b}
	}
	me := make([]entry, len(mounts))
	for i, m := range mounts {
		b, err := encode(m)
		if err != nil {
			return "", err
		}
		me[i] = entry{name: m.Name, path: m.MountPath, subPath: m.SubPath, enc: b}
	}
	order := func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.path, b.path),
			cmp.Compare(a.subPath, b.subPath), cmp.Compare(string(a.enc), string(b.enc)))
	}
	slices.SortFunc(ve, order)
	slices.SortFunc(me, order)

	h := sha256.New()
	for _, group := range []struct {
		tag     string
		entries []entry
	}{{"volume", ve}, {"mount", me}} {
		for _, e := range group.entries {
			// The tag keeps a volume and a mount with equal encodings apart;
			// the newline cannot occur inside compact JSON.
			h.Write([]byte(group.tag))
			h.Write([]byte{0})
			h.Write(e.enc)
			h.Write([]byte{'\n'})
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CanonicalVolume returns a copy of v in which values the API server
// defaults are left out, so an explicit default and an omitted one are the
// same volume: file modes of 0644, a projected token's one-hour expiry,
// fieldRef apiVersion "v1", an empty host path type. Quantities such as an
// emptyDir sizeLimit encode in canonical form ("1024Mi" is "1Gi").
func CanonicalVolume(v corev1.Volume) corev1.Volume {
	c := v.DeepCopy()
	dropDefaultMode := func(m **int32) {
		if *m != nil && **m == defaultVolumeMode {
			*m = nil
		}
	}
	dropFieldRefVersion := func(items []corev1.DownwardAPIVolumeFile) {
		for i := range items {
			if fr := items[i].FieldRef; fr != nil && fr.APIVersion == "v1" {
				fr.APIVersion = ""
			}
		}
	}
	switch {
	case c.ConfigMap != nil:
		dropDefaultMode(&c.ConfigMap.DefaultMode)
	case c.Secret != nil:
		dropDefaultMode(&c.Secret.DefaultMode)
	case c.DownwardAPI != nil:
		dropDefaultMode(&c.DownwardAPI.DefaultMode)
		dropFieldRefVersion(c.DownwardAPI.Items)
	case c.Projected != nil:
		dropDefaultMode(&c.Projected.DefaultMode)
		for i := range c.Projected.Sources {
			s := &c.Projected.Sources[i]
			if t := s.ServiceAccountToken; t != nil && ptr.Deref(t.ExpirationSeconds, 0) == defaultTokenExpirationSeconds {
				t.ExpirationSeconds = nil
			}
			if s.DownwardAPI != nil {
				dropFieldRefVersion(s.DownwardAPI.Items)
			}
		}
	case c.HostPath != nil:
		if c.HostPath.Type != nil && *c.HostPath.Type == corev1.HostPathUnset {
			c.HostPath.Type = nil
		}
	case c.Ephemeral != nil && c.Ephemeral.VolumeClaimTemplate != nil:
		if m := c.Ephemeral.VolumeClaimTemplate.Spec.VolumeMode; m != nil && *m == corev1.PersistentVolumeFilesystem {
			c.Ephemeral.VolumeClaimTemplate.Spec.VolumeMode = nil
		}
	}
	return *c
}

// SetPodVolumesHash records hash in annotations, returning the map to use
// (allocated when needed). An empty hash sets nothing: the key is absent,
// and DeploymentPatch with PodVolumesPrune removes a stale one.
func SetPodVolumesHash(annotations map[string]string, hash string) map[string]string {
	if hash == "" {
		return annotations
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[naming.AnnotationPodVolumesHash] = hash
	return annotations
}
