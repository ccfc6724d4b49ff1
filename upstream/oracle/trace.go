// Package oracle replays a podstatus trace (shared/spec/replay-traces.md) through the
// kubelet's own status manager, pkg/kubelet/status of k8s.io/kubernetes, and reports
// what it did in `podstatus replay`'s format, so that podstatus can be judged by
// Kubernetes' code rather than by its own word.
package oracle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// DefaultClock is where a trace's clock starts when it names none.
const DefaultClock = "2026-01-01T00:00:00Z"

// Trace is the part of a trace document the oracle reads; unknown keys are ignored,
// as the format says. Pods stay raw until their times are shifted.
type Trace struct {
	Clock        string            `json:"clock"`
	APIServer    []json.RawMessage `json:"apiserver"`
	PodManager   []json.RawMessage `json:"pod_manager"`
	DeletionSafe *bool             `json:"deletion_safe"`
	Steps        []Step            `json:"steps"`
	// QuiescenceFrom is where the fuzzer's quiescence steps start: the faults still
	// armed then are removed, as the fuzzer removes them before those steps.
	QuiescenceFrom *int `json:"quiescence_from_step"`
	// WatchedCopies is the fuzzer's counterfactual world (not part of the trace
	// format): the pod manager's starting copies, and each pod it adds, carry the
	// status the API server holds for the same UID where it has one, as a watch with
	// no delay would give it. A difference between a logic that writes without a GET and upstream
	// that goes away here is explained by a stale copy.
	WatchedCopies bool `json:"watched_copies"`
}

// Step is one step of the script; which fields count depends on Op.
type Step struct {
	Op                 string          `json:"op"`
	Pod                json.RawMessage `json:"pod"`
	Status             json.RawMessage `json:"status"`
	UID                string          `json:"uid"`
	ContainerID        string          `json:"container_id"`
	Ready              bool            `json:"ready"`
	Started            bool            `json:"started"`
	Keep               []string        `json:"keep"`
	Ms                 *uint64         `json:"ms"`
	Namespace          string          `json:"namespace"`
	Name               string          `json:"name"`
	Verb               string          `json:"verb"`
	Error              string          `json:"error"`
	Times              *uint64         `json:"times"`
	Value              bool            `json:"value"`
	Condition          string          `json:"condition"`
	Reason             string          `json:"reason"`
	Message            string          `json:"message"`
	ObservedGeneration int64           `json:"observed_generation"`
}

// ParseTrace reads a trace document.
func ParseTrace(doc []byte) (*Trace, error) {
	var t Trace
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("not a trace: %w", err)
	}
	if t.Clock == "" {
		t.Clock = DefaultClock
	}
	if _, err := time.Parse(time.RFC3339Nano, t.Clock); err != nil {
		return nil, fmt.Errorf("clock: %w", err)
	}
	return &t, nil
}

// StepError is a trace the oracle cannot run: podstatus replay's exit 2.
type StepError struct {
	Step    int
	Problem string
}

func (e *StepError) Error() string { return fmt.Sprintf("step %d: %s", e.Step, e.Problem) }
