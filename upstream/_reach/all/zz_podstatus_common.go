// Ours, added to upstream's pkg/kubelet/status by the oracle's overlay for every
// release: what reaching the manager is the same for, whatever the release.

package status

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
)

// copyStatuses copies the status map, putting in the UIDs of order first, in that order.
func copyStatuses(in map[types.UID]versionedPodStatus, order []types.UID) map[types.UID]versionedPodStatus {
	out := make(map[types.UID]versionedPodStatus, len(in))
	put := func(uid types.UID, s versionedPodStatus) {
		s.status = *s.status.DeepCopy()
		out[uid] = s
	}
	for _, uid := range order {
		if s, ok := in[uid]; ok {
			put(uid, s)
		}
	}
	for uid, s := range in {
		if _, done := out[uid]; !done {
			put(uid, s)
		}
	}
	return out
}

func copyVersions(in map[kubetypes.MirrorPodUID]uint64) map[kubetypes.MirrorPodUID]uint64 {
	out := make(map[kubetypes.MirrorPodUID]uint64, len(in))
	for uid, v := range in {
		out[uid] = v
	}
	return out
}

// PodstatusReach drives one upstream manager for the oracle.
type PodstatusReach struct {
	m *manager
}

// GetPodStatus is upstream's GetPodStatus with the cached version beside it.
func (r *PodstatusReach) GetPodStatus(uid types.UID) (v1.PodStatus, uint64, bool) {
	status, ok := r.m.GetPodStatus(uid)
	r.m.podStatusesLock.RLock()
	defer r.m.podStatusesLock.RUnlock()
	return status, r.m.podStatuses[types.UID(r.m.podManager.TranslatePodUID(uid))].version, ok
}

// SignalPending says whether an update left a sync signal in the channel.
func (r *PodstatusReach) SignalPending() bool { return len(r.m.podStatusChannel) > 0 }

// TakeSignal takes the pending sync signal, as Start's loop does; false when none.
func (r *PodstatusReach) TakeSignal() bool {
	select {
	case <-r.m.podStatusChannel:
		return true
	default:
		return false
	}
}

// CachedNames maps each cached pod UID to its namespace and name.
func (r *PodstatusReach) CachedNames() map[types.UID][2]string {
	r.m.podStatusesLock.RLock()
	defer r.m.podStatusesLock.RUnlock()
	names := make(map[types.UID][2]string, len(r.m.podStatuses))
	for uid, s := range r.m.podStatuses {
		names[uid] = [2]string{s.podNamespace, s.podName}
	}
	return names
}

type reachSnapshot struct {
	podStatuses       map[types.UID]versionedPodStatus
	apiStatusVersions map[kubetypes.MirrorPodUID]uint64
	extra             any
	signal            bool
}

// Snapshot copies the manager's state; Restore puts a copy back, its statuses put in
// the map in the order given (the others after them).
func (r *PodstatusReach) Snapshot() any {
	r.m.podStatusesLock.RLock()
	defer r.m.podStatusesLock.RUnlock()
	return reachSnapshot{
		podStatuses:       copyStatuses(r.m.podStatuses, nil),
		apiStatusVersions: copyVersions(r.m.apiStatusVersions),
		extra:             r.snapshotExtra(),
		signal:            len(r.m.podStatusChannel) > 0,
	}
}

func (r *PodstatusReach) Restore(s any, order []types.UID) {
	snap := s.(reachSnapshot)
	r.m.podStatusesLock.Lock()
	r.m.podStatuses = copyStatuses(snap.podStatuses, order)
	r.m.apiStatusVersions = copyVersions(snap.apiStatusVersions)
	r.restoreExtra(snap.extra)
	r.m.podStatusesLock.Unlock()
	r.TakeSignal()
	if snap.signal {
		r.m.podStatusChannel <- struct{}{}
	}
}
