package wiring

import (
	"fmt"
	"hash/fnv"

	"k8s.io/apimachinery/pkg/util/dump"
)

// ConfigHash is the hash ToolHive's operator computes of a value where it
// needs a short fingerprint (its controllerutil's CalculateConfigHash):
// FNV-1a, 32 bits, lower-case hex without padding, of the value's
// apimachinery dump.ForHash rendering. That rendering names the Go types
// and fields it walks, so the hash of a struct is ToolHive's only when the
// struct is shaped as ToolHive's is: hivekeeper's API types that are
// hashed (MCPRegistrySpec) have ToolHive's fields, in ToolHive's order,
// in a package of the same name.
func ConfigHash(v any) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(dump.ForHash(v)))
	return fmt.Sprintf("%x", h.Sum32())
}
