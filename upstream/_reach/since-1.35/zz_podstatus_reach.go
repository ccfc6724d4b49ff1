// This file is ours, not Kubernetes': the oracle's build adds it to upstream's
// pkg/kubelet/status through `go build -overlay` (it sits in a directory the go tool
// ignores, so it is compiled only there). Upstream's own tests live inside the package
// and call the manager's private parts; so does this file, and only these:
//   - syncBatch: the `sync` and `sync-batch` steps are upstream's two sync loop cases
//     (Start runs them on a ticker and a channel; a trace runs them when it says so);
//   - podStatusChannel: a `sync` drains it as Start's loop does;
//   - podStatuses[uid].version: get-pod-status reports the cached version;
//   - a snapshot of podStatuses, apiStatusVersions and podResizeConditions: to run a
//     batch again in another of the orders upstream's map iteration allows.
// It calls the public methods of the manager for everything else. Kubernetes 1.35 and
// later; zz_podstatus_release.go beside it in the overlay holds what differs by release.

package status

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
)

// NewPodstatusReach makes upstream's manager with upstream's NewManager.
func NewPodstatusReach(client clientset.Interface, podManager PodManager, safety PodDeletionSafetyProvider) *PodstatusReach {
	return &PodstatusReach{m: NewManager(client, podManager, safety, noStartupLatency{}).(*manager)}
}

func (r *PodstatusReach) SetPodStatus(pod *v1.Pod, status v1.PodStatus) {
	r.m.SetPodStatus(klog.Background(), pod, status)
}

func (r *PodstatusReach) SetContainerReadiness(uid types.UID, id kubecontainer.ContainerID, ready bool) {
	r.m.SetContainerReadiness(klog.Background(), uid, id, ready)
}

func (r *PodstatusReach) SetContainerStartup(uid types.UID, id kubecontainer.ContainerID, started bool) {
	r.m.SetContainerStartup(klog.Background(), uid, id, started)
}

func (r *PodstatusReach) TerminatePod(pod *v1.Pod) { r.m.TerminatePod(klog.Background(), pod) }

func (r *PodstatusReach) RemoveOrphanedStatuses(keep map[types.UID]bool) {
	r.m.RemoveOrphanedStatuses(klog.Background(), keep)
}

// SupportsResize says whether this release has the resize condition calls.
func (r *PodstatusReach) SupportsResize() bool { return true }

func (r *PodstatusReach) SetResizePending(uid types.UID, reason, message string, generation int64) {
	r.m.SetPodResizePendingCondition(uid, reason, message, generation)
}

func (r *PodstatusReach) SetResizeInProgress(uid types.UID, reason, message string, generation int64) {
	r.m.SetPodResizeInProgressCondition(uid, reason, message, generation)
}

func (r *PodstatusReach) ClearResizePending(uid types.UID) { clearResizePending(r.m, uid) }

func (r *PodstatusReach) ClearResizeInProgress(uid types.UID) {
	r.m.ClearPodResizeInProgressCondition(uid)
}

func (r *PodstatusReach) GetResizeConditions(uid types.UID) []*v1.PodCondition {
	return r.m.GetPodResizeConditions(uid)
}

// SyncBatch is one case of Start's loop: the signal's (all false) or the ticker's.
func (r *PodstatusReach) SyncBatch(all bool) { r.m.syncBatch(context.Background(), all) }

// snapshotExtra copies the resize conditions (a sync of a pod gone drops them).
func (r *PodstatusReach) snapshotExtra() any { return copyResize(r.m.podResizeConditions) }

func (r *PodstatusReach) restoreExtra(extra any) {
	r.m.podResizeConditions = copyResize(extra.(map[types.UID]podResizeConditions))
}

func copyResize(in map[types.UID]podResizeConditions) map[types.UID]podResizeConditions {
	out := make(map[types.UID]podResizeConditions, len(in))
	for uid, c := range in {
		out[uid] = podResizeConditions{
			PodResizePending:    c.PodResizePending.DeepCopy(),
			PodResizeInProgress: c.PodResizeInProgress.DeepCopy(),
		}
	}
	return out
}
