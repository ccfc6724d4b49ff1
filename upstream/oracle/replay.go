package oracle

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	"k8s.io/kubernetes/pkg/kubelet/status"
)

// Release is the Kubernetes release whose status manager this build runs, set by the
// build (`-ldflags -X podstatus.example/upstream/oracle.Release=1.35`).
var Release = "unknown"

// Report is what a replay did, in `podstatus replay`'s format.
type Report struct {
	Results   []any     `json:"results"`
	Calls     []Call    `json:"calls"`
	APIServer []*v1.Pod `json:"apiserver"`
	Fault     any       `json:"fault"`
}

// deletionSafety answers PodCouldHaveRunningContainers as the trace's deletion_safe
// says: containers may run exactly when it is false.
type deletionSafety struct{ safe bool }

func (d *deletionSafety) PodCouldHaveRunningContainers(*v1.Pod) bool { return !d.safe }

// maxOrderTries bounds how often a batch is run again to find upstream's run in the
// order podstatus visits pods (see syncBatch).
const maxOrderTries = 1000

type replay struct {
	trace    *Trace
	shift    time.Duration
	api      *apiServer
	pm       *podManager
	safety   *deletionSafety
	manager  *status.PodstatusReach
	lastSeen map[types.UID]*v1.Pod
	// The pod whose update put the sync signal in the channel, while it is there.
	signalled types.UID
	results   []any
}

// Run replays the trace through upstream's manager. It must run in a synctest bubble
// whose clock has not moved: the bubble's clock becomes the trace's.
func Run(trace *Trace) (doc []byte, err error) {
	start, _ := time.Parse(time.RFC3339Nano, trace.Clock)
	now := time.Now()
	r := &replay{
		trace:    trace,
		shift:    time.Duration(start.Unix()-now.Unix()) * time.Second,
		api:      newAPIServer(),
		pm:       newPodManager(),
		safety:   &deletionSafety{safe: trace.DeletionSafe == nil || *trace.DeletionSafe},
		lastSeen: map[types.UID]*v1.Pod{},
	}
	if wait := start.Add(-r.shift).Sub(now); wait > 0 {
		time.Sleep(wait)
	}
	for i, raw := range trace.APIServer {
		pod, err := r.pod(raw)
		if err == nil {
			r.remember(pod)
			err = r.api.put(pod)
		}
		if err != nil {
			return nil, fmt.Errorf("apiserver[%d]: %w", i, err)
		}
	}
	for i, raw := range trace.PodManager {
		pod, err := r.pod(raw)
		if err != nil {
			return nil, fmt.Errorf("pod_manager[%d]: %w", i, err)
		}
		r.remember(pod)
		r.pm.add(r.watched(pod))
	}
	if err := r.rememberPods(); err != nil {
		return nil, err
	}
	r.api.changed = r.follow
	r.manager = status.NewPodstatusReach(r.api.client(), r.pm, r.safety)
	for i := range trace.Steps {
		if trace.QuiescenceFrom != nil && *trace.QuiescenceFrom == i {
			r.api.rules = nil
		}
		r.api.step = i
		result, err := r.step(&trace.Steps[i])
		if err != nil {
			return nil, &StepError{Step: i, Problem: err.Error()}
		}
		r.results = append(r.results, result)
	}
	report := Report{Results: r.results, Calls: r.api.calls, APIServer: r.api.list(), Fault: nil}
	if report.Results == nil {
		report.Results = []any{}
	}
	if report.Calls == nil {
		report.Calls = []Call{}
	}
	out, err := json.Marshal(report)
	if err != nil {
		return nil, err
	}
	return shiftJSON(out, r.shift)
}

// pod reads a pod of the trace into the bubble's era, with the one default the API
// server would apply (restartPolicy Always).
func (r *replay) pod(raw json.RawMessage) (*v1.Pod, error) {
	shifted, err := shiftJSON(raw, -r.shift)
	if err != nil {
		return nil, err
	}
	var pod v1.Pod
	if err := json.Unmarshal(shifted, &pod); err != nil {
		return nil, fmt.Errorf("not a pod: %w", err)
	}
	if pod.Spec.RestartPolicy == "" {
		pod.Spec.RestartPolicy = v1.RestartPolicyAlways
	}
	return &pod, nil
}

// rememberPods keeps, for a step that names a pod by a UID neither the pod manager
// nor the API server holds any more, the object the replay's world falls back on: the
// first the trace gives for that UID, in the API server's list, the pod manager's
// (both remembered as they are read), then the pods of pod-manager-add and
// apiserver-put steps.
func (r *replay) rememberPods() error {
	for _, s := range r.trace.Steps {
		if s.Op != "pod-manager-add" && s.Op != "apiserver-put" {
			continue
		}
		pod, err := r.pod(s.Pod)
		if err != nil {
			return err
		}
		r.remember(pod)
	}
	return nil
}

// remember keeps a copy of the first object seen for its UID.
func (r *replay) remember(pod *v1.Pod) {
	if _, seen := r.lastSeen[pod.UID]; pod.UID != "" && !seen {
		r.lastSeen[pod.UID] = pod.DeepCopy()
	}
}

// follow is the pod manager following the API server as a watch with no delay: a pod
// it holds is replaced by the API server's copy.
func (r *replay) follow(pod *v1.Pod) {
	if _, ok := r.pm.held(pod.UID); ok {
		r.pm.add(pod)
	}
}

// watched is the copy of pod the pod manager takes: in the WatchedCopies world, with
// the status the API server holds for the same UID, where it has one (only the status:
// a pod's identity, its mirror annotation among it, stays as the trace gives it).
func (r *replay) watched(pod *v1.Pod) *v1.Pod {
	if r.trace.WatchedCopies {
		if api, ok := r.api.byUID(pod.UID); ok {
			pod = pod.DeepCopy()
			pod.Status = *api.Status.DeepCopy()
		}
	}
	return pod
}

// podRef is a step's pod: an object as given, or a UID naming the pod manager's copy
// (else the API server's, else the last object the trace gave).
func (r *replay) podRef(raw json.RawMessage) (*v1.Pod, error) {
	var uid string
	if err := json.Unmarshal(raw, &uid); err != nil {
		return r.pod(raw)
	}
	if pod, ok := r.pm.held(types.UID(uid)); ok {
		return pod.DeepCopy(), nil
	}
	if pod, ok := r.api.byUID(types.UID(uid)); ok {
		return pod.DeepCopy(), nil
	}
	if pod, ok := r.lastSeen[types.UID(uid)]; ok {
		return pod.DeepCopy(), nil
	}
	return nil, fmt.Errorf("no pod has UID %q", uid)
}

// update runs one of the manager's update calls for pod uid, noting whether it put
// the sync signal in the channel.
func (r *replay) update(uid types.UID, call func()) {
	pending := r.manager.SignalPending()
	call()
	if !pending && r.manager.SignalPending() {
		r.signalled = uid
	}
}

func (r *replay) step(s *Step) (any, error) {
	switch s.Op {
	case "set-pod-status":
		pod, err := r.podRef(s.Pod)
		if err != nil {
			return nil, err
		}
		shifted, err := shiftJSON(s.Status, -r.shift)
		if err != nil {
			return nil, err
		}
		var st v1.PodStatus
		if err := json.Unmarshal(shifted, &st); err != nil {
			return nil, fmt.Errorf("not a status: %w", err)
		}
		r.update(pod.UID, func() { r.manager.SetPodStatus(pod, st) })
	case "set-container-readiness":
		id := containerID(s.ContainerID)
		r.update(types.UID(s.UID), func() { r.manager.SetContainerReadiness(types.UID(s.UID), id, s.Ready) })
	case "set-container-startup":
		id := containerID(s.ContainerID)
		r.update(types.UID(s.UID), func() { r.manager.SetContainerStartup(types.UID(s.UID), id, s.Started) })
	case "terminate-pod":
		pod, err := r.podRef(s.Pod)
		if err != nil {
			return nil, err
		}
		r.update(pod.UID, func() { r.manager.TerminatePod(pod) })
	case "remove-orphaned-statuses":
		keep := make(map[types.UID]bool, len(s.Keep))
		for _, uid := range s.Keep {
			keep[types.UID(uid)] = true
		}
		r.manager.RemoveOrphanedStatuses(keep)
	case "get-pod-status":
		st, version, ok := r.manager.GetPodStatus(types.UID(s.UID))
		if !ok {
			return map[string]any{"found": false}, nil
		}
		return map[string]any{"found": true, "version": version, "status": st}, nil
	case "sync":
		for r.manager.TakeSignal() {
			first := r.signalled
			r.signalled = ""
			r.syncBatch(false, first)
		}
	case "sync-batch":
		r.syncBatch(true, "")
	case "advance-clock":
		if s.Ms == nil {
			return nil, fmt.Errorf("advance-clock: missing ms")
		}
		if *s.Ms > uint64(math.MaxInt64/int64(time.Millisecond)) {
			return nil, fmt.Errorf("advance-clock: %d ms is beyond the clock's range", *s.Ms)
		}
		time.Sleep(time.Duration(*s.Ms) * time.Millisecond)
	case "pod-manager-add":
		pod, err := r.pod(s.Pod)
		if err != nil {
			return nil, err
		}
		r.pm.add(r.watched(pod))
	case "pod-manager-remove":
		r.pm.remove(types.UID(s.UID))
	case "apiserver-put":
		pod, err := r.pod(s.Pod)
		if err != nil {
			return nil, err
		}
		if err := r.api.put(pod); err != nil {
			return nil, err
		}
	case "apiserver-delete":
		r.api.remove(s.Namespace, s.Name)
	case "fail":
		times := uint64(1)
		if s.Times != nil {
			times = *s.Times
		}
		r.api.arm(s.Verb, s.Error, times)
	case "set-deletion-safe":
		r.safety.safe = s.Value
	case "set-pod-resize-condition", "clear-pod-resize-condition", "get-pod-resize-conditions":
		return r.resize(s)
	case "complete-api":
		return map[string]any{"completed": false, "held": 0}, nil
	case "release-api":
	case "swap", "hold-api":
		return nil, fmt.Errorf("%s: upstream's manager is one program, with no plugin to swap and no calls to hold", s.Op)
	default:
		return nil, fmt.Errorf("unknown op %q", s.Op)
	}
	return nil, nil
}

// containerID is the kubelet's ParseContainerID without its log line (whose signature
// changes across releases): a malformed ID is the zero ID.
func containerID(text string) kubecontainer.ContainerID {
	var id kubecontainer.ContainerID
	if err := id.ParseString(text); err != nil {
		return kubecontainer.ContainerID{}
	}
	return id
}

func (r *replay) resize(s *Step) (any, error) {
	if !r.manager.SupportsResize() {
		return nil, fmt.Errorf("%s: Kubernetes %s's status manager has no resize conditions", s.Op, Release)
	}
	uid := types.UID(s.UID)
	had := func(t v1.PodConditionType) bool {
		for _, c := range r.manager.GetResizeConditions(uid) {
			if c.Type == t {
				return true
			}
		}
		return false
	}
	switch {
	case s.Op == "get-pod-resize-conditions":
		conditions := []any{}
		for _, c := range r.manager.GetResizeConditions(uid) {
			conditions = append(conditions, c)
		}
		return map[string]any{"conditions": conditions}, nil
	case s.Op == "set-pod-resize-condition" && s.Condition == "pending":
		r.manager.SetResizePending(uid, s.Reason, s.Message, s.ObservedGeneration)
	case s.Op == "set-pod-resize-condition":
		r.manager.SetResizeInProgress(uid, s.Reason, s.Message, s.ObservedGeneration)
	case s.Condition == "pending":
		cleared := had("PodResizePending")
		r.manager.ClearResizePending(uid)
		return map[string]any{"cleared": cleared}, nil
	default:
		cleared := had("PodResizeInProgress")
		r.manager.ClearResizeInProgress(uid)
		return map[string]any{"cleared": cleared}, nil
	}
	return nil, nil
}

// syncBatch runs one case of upstream's sync loop. Upstream visits the pods to sync in
// Go's map order, which the language leaves free; podstatus visits them in UID order
// (after the pod whose update raised the signal, in a signal's pass). Where the order
// can change the outcome (a fault armed that the first calls use up, or two cached pods
// of one name: one's sync can delete the object the other's GET then misses), the manager's
// map is rebuilt from a snapshot with its pods put in in podstatus's order (a small Go
// map iterates a rotation of the order its entries went in) and the batch is run
// again until upstream's own run visits them in that order, which upstream says in its
// log (syncLog): upstream's code decides everything, the oracle only picks which of
// its allowed orders to report. Elsewhere the order only orders the calls, which the
// comparison does not hold.
func (r *replay) syncBatch(all bool, first types.UID) {
	names := r.manager.CachedNames()
	if len(names) < 2 || len(r.api.rules) == 0 && !sharesAName(names) {
		r.manager.SyncBatch(all)
		return
	}
	order := make([]types.UID, 0, len(names))
	for uid := range names {
		order = append(order, uid)
	}
	sort.Slice(order, func(i, j int) bool {
		if (order[i] == first) != (order[j] == first) {
			return order[i] == first
		}
		return order[i] < order[j]
	})
	api, manager, pods, signalled := r.api.snapshot(), r.manager.Snapshot(), r.pm.snapshot(), r.signalled
	logs.listen(true)
	defer logs.listen(false)
	for try := 0; ; try++ {
		r.manager.Restore(manager, order)
		logs.listen(true)
		r.manager.SyncBatch(all)
		if try == maxOrderTries || inOrder(logs.synced, order) {
			return
		}
		r.api.restore(api)
		r.pm.restore(pods)
		r.signalled = signalled
	}
}

// sharesAName says whether two cached pods have the same namespace and name (a pod
// recreated under its name).
func sharesAName(names map[types.UID][2]string) bool {
	seen := make(map[[2]string]bool, len(names))
	for _, name := range names {
		if seen[name] {
			return true
		}
		seen[name] = true
	}
	return false
}

// inOrder says whether the pods a batch synced (as upstream's log names them) came in
// the order given: pods the batch had nothing to do for are not synced.
func inOrder(synced []types.UID, order []types.UID) bool {
	next := 0
	for _, uid := range synced {
		for next < len(order) && order[next] != uid {
			next++
		}
		if next == len(order) {
			return false
		}
		next++
	}
	return true
}
