package oracle

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubepod "k8s.io/kubernetes/pkg/kubelet/pod"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
)

// podManager is the trace's pod manager, paired as the replay's own
// (shared/reference/helpers.md): a static pod (config.source other than api) with the
// mirror pod of its full name, worked out from the pods held now, the smallest UID
// first where several share a name. Upstream's basic pod manager pairs a mirror pod
// with any pod of its name and keeps a pairing after the static pod leaves; the
// project does not, and the oracle judges the status manager, so both worlds pair
// alike. It serves the four calls the status manager makes (the wider interface of
// 1.27's manager is embedded, unset: any other call is a bug of the oracle).
type podManager struct {
	kubepod.Manager
	pods map[types.UID]*v1.Pod
}

func newPodManager() *podManager { return &podManager{pods: map[types.UID]*v1.Pod{}} }

func (pm *podManager) add(pod *v1.Pod) { pm.pods[pod.UID] = pod }

func (pm *podManager) remove(uid types.UID) { delete(pm.pods, uid) }

func (pm *podManager) held(uid types.UID) (*v1.Pod, bool) {
	pod, ok := pm.pods[uid]
	return pod, ok
}

// snapshot and restore, for a batch run again (see replay.go).
func (pm *podManager) snapshot() map[types.UID]*v1.Pod {
	pods := make(map[types.UID]*v1.Pod, len(pm.pods))
	for uid, pod := range pm.pods {
		pods[uid] = pod.DeepCopy()
	}
	return pods
}

func (pm *podManager) restore(pods map[types.UID]*v1.Pod) {
	pm.pods = make(map[types.UID]*v1.Pod, len(pods))
	for uid, pod := range pods {
		pm.pods[uid] = pod.DeepCopy()
	}
}

func isPairableStatic(pod *v1.Pod) bool {
	return kubetypes.IsStaticPod(pod) && !kubetypes.IsMirrorPod(pod)
}

// named is every held pod of pod's full name that is wanted, by UID.
func (pm *podManager) named(pod *v1.Pod, wanted func(*v1.Pod) bool) (*v1.Pod, bool) {
	var found []*v1.Pod
	for _, other := range pm.pods {
		if other.Namespace == pod.Namespace && other.Name == pod.Name && wanted(other) {
			found = append(found, other)
		}
	}
	if len(found) == 0 {
		return nil, false
	}
	sort.Slice(found, func(i, j int) bool { return found[i].UID < found[j].UID })
	return found[0], true
}

// GetPodByUID: the pod with that UID; mirror pods are not found this way.
func (pm *podManager) GetPodByUID(uid types.UID) (*v1.Pod, bool) {
	pod, ok := pm.pods[uid]
	if !ok || kubetypes.IsMirrorPod(pod) {
		return nil, false
	}
	return pod, true
}

// GetMirrorPodByPod: a static pod's mirror pod.
func (pm *podManager) GetMirrorPodByPod(pod *v1.Pod) (*v1.Pod, bool) {
	if !isPairableStatic(pod) {
		return nil, false
	}
	return pm.named(pod, kubetypes.IsMirrorPod)
}

// TranslatePodUID: a mirror pod's UID becomes its static pod's; any other is kept.
func (pm *podManager) TranslatePodUID(uid types.UID) kubetypes.ResolvedPodUID {
	if mirror, ok := pm.pods[uid]; ok && kubetypes.IsMirrorPod(mirror) {
		if static, ok := pm.named(mirror, isPairableStatic); ok {
			return kubetypes.ResolvedPodUID(static.UID)
		}
	}
	return kubetypes.ResolvedPodUID(uid)
}

// GetUIDTranslations: static UID to mirror UID ("" without one) for every static pod,
// mirror UID to static UID for every mirror pod that has one.
func (pm *podManager) GetUIDTranslations() (map[kubetypes.ResolvedPodUID]kubetypes.MirrorPodUID, map[kubetypes.MirrorPodUID]kubetypes.ResolvedPodUID) {
	podToMirror := map[kubetypes.ResolvedPodUID]kubetypes.MirrorPodUID{}
	mirrorToPod := map[kubetypes.MirrorPodUID]kubetypes.ResolvedPodUID{}
	for uid, pod := range pm.pods {
		switch {
		case kubetypes.IsMirrorPod(pod):
			if static, ok := pm.named(pod, isPairableStatic); ok {
				mirrorToPod[kubetypes.MirrorPodUID(uid)] = kubetypes.ResolvedPodUID(static.UID)
			}
		case kubetypes.IsStaticPod(pod):
			mirror, _ := pm.named(pod, kubetypes.IsMirrorPod)
			var mirrorUID kubetypes.MirrorPodUID
			if mirror != nil {
				mirrorUID = kubetypes.MirrorPodUID(mirror.UID)
			}
			podToMirror[kubetypes.ResolvedPodUID(uid)] = mirrorUID
		}
	}
	return podToMirror, mirrorToPod
}
