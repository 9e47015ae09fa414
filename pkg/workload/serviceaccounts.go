package workload

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

// ServiceAccountHandler is the ServiceAccount informer's handler that
// re-syncs, through enqueue, the workloads of primary (by the reference
// index index.ByServiceAccount) whose spec names the account for their
// pods. Whether a workload may run as an account depends on the account's
// controller owner (wiring.CheckServiceAccount), and an account that does
// not exist yet is allowed: without this, an account another workload's
// sync creates later under the name a workload already runs as would go
// unnoticed until that workload's next change. So an account's creation,
// deletion, and change of controller owner re-sync its namers; other
// updates (a resync, a new pull secret) do not.
func ServiceAccountHandler(primary cache.Indexer, enqueue func(cache.ObjectName)) cache.ResourceEventHandlerFuncs {
	namers := func(obj any) { EnqueueReferrers(primary, index.ByServiceAccount, obj, enqueue) }
	return cache.ResourceEventHandlerFuncs{
		AddFunc: namers,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := framework.MetaFromObj(oldObj)
			n, ok2 := framework.MetaFromObj(newObj)
			if ok1 && ok2 && reflect.DeepEqual(metav1.GetControllerOf(o), metav1.GetControllerOf(n)) {
				return
			}
			namers(newObj)
		},
		DeleteFunc: namers,
	}
}

// WatchNamedServiceAccounts registers ServiceAccountHandler for the
// workloads of primary on every ServiceAccount of d's scopes, the loop
// waiting for it to sync.
func WatchNamedServiceAccounts(d *framework.Deps, primary cache.Indexer, loop *framework.Loop) error {
	accounts := d.KubeAllInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().ServiceAccounts().Informer()
	})
	synced, err := accounts.AddEventHandler(ServiceAccountHandler(primary, loop.EnqueueKey))
	if err != nil {
		return err
	}
	loop.AddSynced(synced)
	return nil
}
