//go:build !podstatus_k8s_1_27

package oracle

import (
	v1 "k8s.io/api/core/v1"
	kubepod "k8s.io/kubernetes/pkg/kubelet/pod"
)

// newPodManager is upstream's own pod manager.
func newPodManager() kubepod.Manager { return kubepod.NewBasicPodManager() }

func removePod(pm kubepod.Manager, pod *v1.Pod) { pm.RemovePod(pod) }

// allPods is every pod the pod manager holds, mirror pods included.
func allPods(pm kubepod.Manager) []*v1.Pod {
	pods, mirrors, _ := pm.GetPodsAndMirrorPods()
	return append(pods, mirrors...)
}
