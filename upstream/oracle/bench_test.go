package oracle

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	"k8s.io/kubernetes/pkg/kubelet/status"
)

// The operations bench's own pod and status (host/cli/benches/fixture/), so that
// upstream's Go and podstatus are timed on the very same JSON: set
// PODSTATUS_BENCH_FIXTURE to that folder when the test binary runs elsewhere.
func benchFixture(b *testing.B) (pod []byte, statuses [2][]byte) {
	dir := os.Getenv("PODSTATUS_BENCH_FIXTURE")
	if dir == "" {
		dir = filepath.Join("..", "..", "host", "cli", "benches", "fixture")
	}
	pod, err := os.ReadFile(filepath.Join(dir, "pod.json"))
	if err != nil {
		b.Fatalf("the operations bench's fixture: %v", err)
	}
	text, err := os.ReadFile(filepath.Join(dir, "status.json"))
	if err != nil {
		b.Fatalf("the operations bench's fixture: %v", err)
	}
	// As the Rust fixture's variants: the app container's restart count 3 or 4.
	for i := range statuses {
		var doc map[string]any
		if err := json.Unmarshal(text, &doc); err != nil {
			b.Fatal(err)
		}
		doc["containerStatuses"].([]any)[0].(map[string]any)["restartCount"] = 3 + i
		statuses[i], _ = json.Marshal(doc)
	}
	return pod, statuses
}

// benchWorld is upstream's manager over the oracle's API server holding the pod.
func benchWorld(b *testing.B, podJSON []byte) (*status.PodstatusReach, *apiServer) {
	var pod v1.Pod
	if err := json.Unmarshal(podJSON, &pod); err != nil {
		b.Fatal(err)
	}
	api, pm := newAPIServer(), newPodManager()
	if err := api.put(pod.DeepCopy()); err != nil {
		b.Fatal(err)
	}
	pm.add(pod.DeepCopy())
	api.changed = func(p *v1.Pod) { pm.add(p) }
	return status.NewPodstatusReach(api.client(), pm, &deletionSafety{safe: true}), api
}

// decode is what podstatus's plugin does with each call's JSON: the pod and the status
// cross the boundary as Kubernetes JSON, and upstream's Go takes them as structs.
func decode(b *testing.B, podJSON, statusJSON []byte) (*v1.Pod, v1.PodStatus) {
	var pod v1.Pod
	var st v1.PodStatus
	if err := json.Unmarshal(podJSON, &pod); err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(statusJSON, &st); err != nil {
		b.Fatal(err)
	}
	return &pod, st
}

// BenchmarkSetPodStatusChanged: each call caches a real change (the two statuses
// alternate), from the JSON in.
func BenchmarkSetPodStatusChanged(b *testing.B) {
	podJSON, statuses := benchFixture(b)
	m, _ := benchWorld(b, podJSON)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pod, st := decode(b, podJSON, statuses[i%2])
		m.SetPodStatus(pod, st)
		m.TakeSignal()
	}
}

// BenchmarkSetPodStatusUnchanged: the kubelet's common case, a call that changes
// nothing.
func BenchmarkSetPodStatusUnchanged(b *testing.B) {
	podJSON, statuses := benchFixture(b)
	m, _ := benchWorld(b, podJSON)
	pod, st := decode(b, podJSON, statuses[0])
	m.SetPodStatus(pod, st)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pod, st := decode(b, podJSON, statuses[0])
		m.SetPodStatus(pod, st)
	}
}

// BenchmarkSetContainerReadiness: readiness of the app container, toggled.
func BenchmarkSetContainerReadiness(b *testing.B) {
	podJSON, statuses := benchFixture(b)
	m, _ := benchWorld(b, podJSON)
	pod, st := decode(b, podJSON, statuses[0])
	m.SetPodStatus(pod, st)
	id := kubecontainer.ContainerID{Type: "containerd", ID: "app-1"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.SetContainerReadiness(types.UID(pod.UID), id, i%2 == 0)
		m.TakeSignal()
	}
}

// BenchmarkSyncPod: one pod's sync of a freshly cached change (GET, the merge, the
// strategic merge PATCH against the fake clientset's store, the bookkeeping): the
// signal's pass, syncBatch(false), over one pod.
func BenchmarkSyncPod(b *testing.B) {
	podJSON, statuses := benchFixture(b)
	m, _ := benchWorld(b, podJSON)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		pod, st := decode(b, podJSON, statuses[i%2])
		m.SetPodStatus(pod, st)
		m.TakeSignal()
		b.StartTimer()
		m.SyncBatch(false)
	}
}

// BenchmarkJSONFloor: decoding the pod and the status and encoding the status again,
// the part of each SetPodStatus above that is the JSON boundary's (the Go counterpart
// of the operations bench's serde floor).
func BenchmarkJSONFloor(b *testing.B) {
	podJSON, statuses := benchFixture(b)
	for i := 0; i < b.N; i++ {
		_, st := decode(b, podJSON, statuses[i%2])
		if _, err := json.Marshal(st); err != nil {
			b.Fatal(err)
		}
	}
}
