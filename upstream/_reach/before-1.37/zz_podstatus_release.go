// Ours, added to upstream's pkg/kubelet/status by the oracle's overlay beside
// zz_podstatus_reach.go: what Kubernetes 1.35 and 1.36 spell their own way.

package status

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func clearResizePending(m *manager, uid types.UID) { m.ClearPodResizePendingCondition(uid) }

// noStartupLatency is the startup latency tracker the oracle needs none of.
type noStartupLatency struct{}

func (noStartupLatency) RecordStatusUpdated(*v1.Pod)     {}
func (noStartupLatency) DeletePodStartupState(types.UID) {}
