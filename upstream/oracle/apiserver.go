package oracle

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
)

// Call is one API call upstream made, as `podstatus replay` reports it.
type Call struct {
	Step               int      `json:"step"`
	Verb               string   `json:"verb"`
	Subresource        string   `json:"subresource,omitempty"`
	Namespace          string   `json:"namespace"`
	Name               string   `json:"name"`
	TargetUID          *string  `json:"target_uid,omitempty"`
	PreconditionUID    *string  `json:"precondition_uid,omitempty"`
	GracePeriodSeconds *int64   `json:"grace_period_seconds,omitempty"`
	Outcome            string   `json:"outcome"`
	writes             optional `json:"-"`
}

// optional marks which of a call's pointer fields the report carries even when null.
type optional struct{ targetUID, preconditionUID, gracePeriod bool }

// MarshalJSON writes a write's target_uid, and a delete's or patch's precondition and
// grace period, even when they are null, as the replay's report does.
func (c Call) MarshalJSON() ([]byte, error) {
	out := map[string]any{"step": c.Step, "verb": c.Verb, "namespace": c.Namespace, "name": c.Name, "outcome": c.Outcome}
	if c.Subresource != "" {
		out["subresource"] = c.Subresource
	}
	if c.writes.targetUID {
		out["target_uid"] = c.TargetUID
	}
	if c.writes.preconditionUID {
		out["precondition_uid"] = c.PreconditionUID
	}
	if c.writes.gracePeriod {
		out["grace_period_seconds"] = c.GracePeriodSeconds
	}
	return json.Marshal(out)
}

type rule struct {
	verb, err string
	left      uint64
}

type key struct{ namespace, name string }

// apiServer is the trace's API server for pods, behind client-go's fake clientset:
// objects by namespace and name, a resourceVersion that moves on every write, UID
// preconditions (beside a delete, inside a status patch) as kube-apiserver checks
// them, status patches applied by apimachinery's strategic merge as kube-apiserver
// applies them, the trace's faults injected before the store is touched, and every
// call recorded.
type apiServer struct {
	pods    map[key]*v1.Pod
	rv      uint64
	rules   []rule
	calls   []Call
	step    int
	changed func(*v1.Pod) // told of every pod the store writes
}

func newAPIServer() *apiServer { return &apiServer{pods: map[key]*v1.Pod{}} }

// put stores a pod as an outside writer does: created or replaced, status included; a
// pod without a UID keeps the stored one's.
func (a *apiServer) put(pod *v1.Pod) error {
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	k := key{pod.Namespace, pod.Name}
	if pod.UID == "" {
		if old, ok := a.pods[k]; ok {
			pod.UID = old.UID
		}
	}
	if pod.UID == "" {
		return fmt.Errorf("pod %s/%s has no UID", pod.Namespace, pod.Name)
	}
	a.store(k, pod)
	return nil
}

func (a *apiServer) store(k key, pod *v1.Pod) {
	a.rv++
	pod.ResourceVersion = strconv.FormatUint(a.rv, 10)
	a.pods[k] = pod
	if a.changed != nil {
		a.changed(pod.DeepCopy())
	}
}

// remove deletes a pod; like etcd's revision, the resourceVersion moves on a delete too.
func (a *apiServer) remove(namespace, name string) {
	if _, ok := a.pods[key{namespace, name}]; ok {
		a.rv++
		delete(a.pods, key{namespace, name})
	}
}

func (a *apiServer) byUID(uid types.UID) (*v1.Pod, bool) {
	for _, pod := range a.pods {
		if pod.UID == uid {
			return pod, true
		}
	}
	return nil, false
}

// list is the store's pods by namespace then name.
func (a *apiServer) list() []*v1.Pod {
	pods := make([]*v1.Pod, 0, len(a.pods))
	for _, pod := range a.pods {
		pods = append(pods, pod)
	}
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	return pods
}

func (a *apiServer) arm(verb, err string, times uint64) {
	if times > 0 {
		a.rules = append(a.rules, rule{verb, err, times})
	}
}

// injected uses up the earliest armed rule matching verb, if any.
func (a *apiServer) injected(verb, name string) error {
	for i := range a.rules {
		if a.rules[i].verb != verb && a.rules[i].verb != "any" {
			continue
		}
		err := a.rules[i].err
		if a.rules[i].left--; a.rules[i].left == 0 {
			a.rules = append(a.rules[:i], a.rules[i+1:]...)
		}
		gr := v1.Resource("pods")
		switch err {
		case "not-found":
			return apierrors.NewNotFound(gr, name)
		case "conflict":
			return apierrors.NewConflict(gr, name, fmt.Errorf("injected conflict"))
		case "unavailable":
			return apierrors.NewServiceUnavailable("injected: service unavailable")
		default:
			return apierrors.NewInternalError(fmt.Errorf("injected internal error"))
		}
	}
	return nil
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case apierrors.IsNotFound(err):
		return "not-found"
	case apierrors.IsConflict(err):
		return "conflict"
	default:
		return "error"
	}
}

// client is a fake clientset whose pods are this store's.
func (a *apiServer) client() *fake.Clientset {
	c := fake.NewSimpleClientset()
	c.PrependReactor("*", "pods", func(action core.Action) (bool, runtime.Object, error) {
		obj, err := a.react(action)
		return true, obj, err
	})
	return c
}

func (a *apiServer) react(action core.Action) (runtime.Object, error) {
	ns := action.GetNamespace()
	// By verb: every action with a name is a GetAction to Go's type switch.
	switch action.GetVerb() {
	case "get":
		name := action.(core.GetAction).GetName()
		err := a.injected("get", name)
		var pod *v1.Pod
		if err == nil {
			pod, err = a.get(ns, name)
		}
		a.calls = append(a.calls, Call{Step: a.step, Verb: "get", Namespace: ns, Name: name, Outcome: outcome(err)})
		if err != nil {
			return nil, err
		}
		return pod.DeepCopy(), nil
	case "patch":
		return a.patch(ns, action.(core.PatchAction))
	case "update":
		return a.update(ns, action.(core.UpdateAction))
	case "delete":
		return nil, a.delete(ns, action.(core.DeleteAction))
	}
	return nil, apierrors.NewMethodNotSupported(v1.Resource("pods"), action.GetVerb())
}

func (a *apiServer) get(ns, name string) (*v1.Pod, error) {
	pod, ok := a.pods[key{ns, name}]
	if !ok {
		return nil, apierrors.NewNotFound(v1.Resource("pods"), name)
	}
	return pod, nil
}

func uidMismatch(name string, want, got types.UID) error {
	return apierrors.NewConflict(v1.Resource("pods"), name,
		fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", want, got))
}

// patch applies a status patch: only status changes (the status subresource), after
// the UID the patch carries is checked against the stored object's.
func (a *apiServer) patch(ns string, action core.PatchAction) (runtime.Object, error) {
	call := Call{Step: a.step, Verb: "patch", Namespace: ns, Name: action.GetName(), writes: optional{targetUID: true, preconditionUID: true}}
	if action.GetSubresource() != "" {
		call.Subresource = action.GetSubresource()
	}
	var carried struct {
		Metadata struct {
			UID *string `json:"uid"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(action.GetPatch(), &carried)
	call.PreconditionUID = carried.Metadata.UID
	pod, err := a.patched(ns, action, carried.Metadata.UID)
	call.Outcome = outcome(err)
	if err == nil {
		uid := string(pod.UID)
		call.TargetUID = &uid
	}
	a.calls = append(a.calls, call)
	if err != nil {
		return nil, err
	}
	return pod.DeepCopy(), nil
}

func (a *apiServer) patched(ns string, action core.PatchAction, uid *string) (*v1.Pod, error) {
	if err := a.injected("write", action.GetName()); err != nil {
		return nil, err
	}
	if action.GetSubresource() != "status" || action.GetPatchType() != types.StrategicMergePatchType {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the oracle serves strategic merge patches of status only, not %s of %q", action.GetPatchType(), action.GetSubresource()))
	}
	stored, err := a.get(ns, action.GetName())
	if err != nil {
		return nil, err
	}
	if uid != nil && *uid != "" && types.UID(*uid) != stored.UID {
		return nil, uidMismatch(action.GetName(), types.UID(*uid), stored.UID)
	}
	original, err := json.Marshal(stored)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	merged, err := strategicpatch.StrategicMergePatch(original, action.GetPatch(), v1.Pod{})
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	var result v1.Pod
	if err := json.Unmarshal(merged, &result); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	pod := stored.DeepCopy()
	pod.Status = result.Status
	a.store(key{ns, action.GetName()}, pod)
	return pod, nil
}

// update is a PUT of status, guarded by the object's UID and resourceVersion.
func (a *apiServer) update(ns string, action core.UpdateAction) (runtime.Object, error) {
	in, _ := action.GetObject().(*v1.Pod)
	if in == nil {
		return nil, apierrors.NewBadRequest("not a pod")
	}
	call := Call{Step: a.step, Verb: "update", Subresource: action.GetSubresource(), Namespace: ns, Name: in.Name, writes: optional{targetUID: true}}
	err := a.injected("write", in.Name)
	var pod *v1.Pod
	if err == nil {
		pod, err = a.get(ns, in.Name)
	}
	if err == nil && in.UID != "" && in.UID != pod.UID {
		err = uidMismatch(in.Name, in.UID, pod.UID)
	}
	if err == nil && in.ResourceVersion != "" && in.ResourceVersion != pod.ResourceVersion {
		err = apierrors.NewConflict(v1.Resource("pods"), in.Name, fmt.Errorf("the object has been modified"))
	}
	if err == nil {
		pod = pod.DeepCopy()
		pod.Status = in.Status
		a.store(key{ns, in.Name}, pod)
		uid := string(pod.UID)
		call.TargetUID = &uid
	}
	call.Outcome = outcome(err)
	a.calls = append(a.calls, call)
	if err != nil {
		return nil, err
	}
	return pod.DeepCopy(), nil
}

// delete removes the object at once, as the replay's API server does, once its UID
// precondition holds.
func (a *apiServer) delete(ns string, action core.DeleteAction) error {
	opts := action.GetDeleteOptions()
	call := Call{Step: a.step, Verb: "delete", Namespace: ns, Name: action.GetName(), GracePeriodSeconds: opts.GracePeriodSeconds, writes: optional{preconditionUID: true, gracePeriod: true}}
	if opts.Preconditions != nil && opts.Preconditions.UID != nil {
		uid := string(*opts.Preconditions.UID)
		call.PreconditionUID = &uid
	}
	err := a.injected("delete", action.GetName())
	var pod *v1.Pod
	if err == nil {
		pod, err = a.get(ns, action.GetName())
	}
	if err == nil && call.PreconditionUID != nil && *call.PreconditionUID != "" && types.UID(*call.PreconditionUID) != pod.UID {
		err = uidMismatch(action.GetName(), types.UID(*call.PreconditionUID), pod.UID)
	}
	if err == nil {
		a.remove(ns, action.GetName())
	}
	call.Outcome = outcome(err)
	a.calls = append(a.calls, call)
	return err
}

// snapshot and restore the store, its faults and its calls (see replay.go's ordered
// batch).
type apiSnapshot struct {
	pods  map[key]*v1.Pod
	rv    uint64
	rules []rule
	calls int
}

func (a *apiServer) snapshot() apiSnapshot {
	pods := make(map[key]*v1.Pod, len(a.pods))
	for k, p := range a.pods {
		pods[k] = p.DeepCopy()
	}
	return apiSnapshot{pods: pods, rv: a.rv, rules: append([]rule(nil), a.rules...), calls: len(a.calls)}
}

func (a *apiServer) restore(s apiSnapshot) {
	a.pods = make(map[key]*v1.Pod, len(s.pods))
	for k, p := range s.pods {
		a.pods[k] = p.DeepCopy()
	}
	a.rv, a.rules, a.calls = s.rv, append([]rule(nil), s.rules...), a.calls[:s.calls]
}
