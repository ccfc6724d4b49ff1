// This file is ours, not Kubernetes': the oracle's build adds it to upstream's
// pkg/kubelet/status of Kubernetes 1.27 through `go build -overlay`, as
// ../since-1.35/zz_podstatus_reach.go does for later releases (which says why each
// private part is reached). 1.27 has no resize conditions and no logger arguments.

package status

import (
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	kubepod "k8s.io/kubernetes/pkg/kubelet/pod"
)

// NewPodstatusReach makes upstream's manager with upstream's NewManager (its state
// directory is only read with InPlacePodVerticalScaling on, off by default in 1.27).
func NewPodstatusReach(client clientset.Interface, podManager kubepod.Manager, safety PodDeletionSafetyProvider) *PodstatusReach {
	return &PodstatusReach{m: NewManager(client, podManager, safety, noStartupLatency{}, os.TempDir()).(*manager)}
}

func (r *PodstatusReach) SetPodStatus(pod *v1.Pod, status v1.PodStatus) {
	r.m.SetPodStatus(pod, status)
}

func (r *PodstatusReach) SetContainerReadiness(uid types.UID, id kubecontainer.ContainerID, ready bool) {
	r.m.SetContainerReadiness(uid, id, ready)
}

func (r *PodstatusReach) SetContainerStartup(uid types.UID, id kubecontainer.ContainerID, started bool) {
	r.m.SetContainerStartup(uid, id, started)
}

func (r *PodstatusReach) TerminatePod(pod *v1.Pod) { r.m.TerminatePod(pod) }

func (r *PodstatusReach) RemoveOrphanedStatuses(keep map[types.UID]bool) {
	r.m.RemoveOrphanedStatuses(keep)
}

// SupportsResize: 1.27's manager has no resize conditions.
func (r *PodstatusReach) SupportsResize() bool { return false }

func (r *PodstatusReach) SetResizePending(types.UID, string, string, int64)    {}
func (r *PodstatusReach) SetResizeInProgress(types.UID, string, string, int64) {}
func (r *PodstatusReach) ClearResizePending(types.UID)                         {}
func (r *PodstatusReach) ClearResizeInProgress(types.UID)                      {}
func (r *PodstatusReach) GetResizeConditions(types.UID) []*v1.PodCondition     { return nil }

// SyncBatch is one case of Start's loop: the signal's (all false) or the ticker's.
func (r *PodstatusReach) SyncBatch(all bool) { r.m.syncBatch(all) }

// noStartupLatency is the startup latency tracker the oracle needs none of.
type noStartupLatency struct{}

func (noStartupLatency) RecordStatusUpdated(*v1.Pod)     {}
func (noStartupLatency) DeletePodStartupState(types.UID) {}

// 1.27's manager keeps nothing beside the statuses a batch could change.
func (r *PodstatusReach) snapshotExtra() any { return nil }
func (r *PodstatusReach) restoreExtra(any)   {}
