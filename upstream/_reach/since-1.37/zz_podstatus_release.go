// Ours, added to upstream's pkg/kubelet/status by the oracle's overlay beside
// zz_podstatus_reach.go: what Kubernetes 1.37 spells its own way.

package status

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/metrics"
)

// 1.37 records why a deferred resize was resolved; a trace's clear is the kubelet's
// as when the resize was accepted (the metric label is all it changes).
func clearResizePending(m *manager, uid types.UID) {
	m.ClearPodResizePendingCondition(uid, metrics.DeferredResizeResolutionAccepted)
}

// noStartupLatency is the startup latency tracker the oracle needs none of (1.37's
// takes a logger).
type noStartupLatency struct{}

func (noStartupLatency) RecordStatusUpdated(klog.Logger, *v1.Pod) {}
func (noStartupLatency) DeletePodStartupState(types.UID)          {}
