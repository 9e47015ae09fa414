package workload

import (
	"k8s.io/client-go/tools/cache"

	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
)

// benchFixture is a namespace of 10,000 workloads of all three kinds, 100
// of which reference "cfg" and the rest 99 other configs, with cfg's status
// already converged.
func benchFixture(b *testing.B) *fixture {
	const total, referencing = 10000, 100
	objs := []runtime.Object{config(testNS, "cfg")}
	for i := range total {
		cfg := fmt.Sprintf("other-%d", i%99)
		if i%(total/referencing) == 0 {
			cfg = "cfg"
		}
		name := fmt.Sprintf("w-%05d", i)
		switch i % 10 {
		case 1:
			objs = append(objs, proxy(testNS, name, cfg))
		case 2:
			objs = append(objs, vmcp(testNS, name, cfg))
		default:
			objs = append(objs, server(testNS, name, cfg))
		}
	}
	f := newFixture(b, objs...)
	if err := f.c.sync(context.Background(), cache.NewObjectName(testNS, "cfg")); err != nil {
		b.Fatal(err)
	}
	if n := f.feedBack(testNS, "cfg").Status.ReferenceCount; n != referencing {
		b.Fatalf("fixture has %d referrers, want %d", n, referencing)
	}
	f.client.ClearActions()
	return f
}

// BenchmarkRecomputeReferrers measures the recompute of one config's
// referencing workloads out of a namespace of 10,000 (100 referrers), alone
// and as part of a whole steady-state sync (which must write nothing).
func BenchmarkRecomputeReferrers(b *testing.B) {
	f := benchFixture(b)
	key := cache.NewObjectName(testNS, "cfg")

	b.Run("recompute", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			refs, err := f.c.referrersOf(key.String())
			if err != nil || len(refs) != 100 {
				b.Fatalf("got %d referrers, err %v", len(refs), err)
			}
		}
	})
	b.Run("sync", func(b *testing.B) {
		ctx := klog.NewContext(context.Background(), klog.Background())
		b.ReportAllocs()
		for b.Loop() {
			if err := f.c.sync(ctx, key); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if a := f.client.Actions(); len(a) != 0 {
			b.Fatalf("steady-state sync wrote: %s", describe(a))
		}
	})
}
