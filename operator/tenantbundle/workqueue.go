package tenantbundle

import (
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
