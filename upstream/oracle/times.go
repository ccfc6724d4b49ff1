package oracle

import (
	"bytes"
	"encoding/json"
	"time"
)

// Upstream reads time from time.Now and metav1.Now, and no clock can be handed to it.
// The oracle runs each trace in a testing/synctest bubble instead, whose clock starts
// at 2000-01-01T00:00:00Z and moves only when the trace sleeps (advance-clock). Every
// time the trace gives is moved into the bubble's era by the same whole number of
// seconds (the trace clock's start less the bubble's), and every time upstream reports
// is moved back: so upstream sees exactly the trace's clock, and its times (which
// metav1.Time keeps to the second) come out as the trace's own. No wall-clock time
// reaches a report.

// timeKeys are the keys of the time fields of a Pod (metav1.Time, RFC 3339).
var timeKeys = map[string]bool{
	"creationTimestamp":  true,
	"deletionTimestamp":  true,
	"time":               true,
	"startTime":          true,
	"lastProbeTime":      true,
	"lastTransitionTime": true,
	"lastHeartbeatTime":  true,
	"lastUpdateTime":     true,
	"startedAt":          true,
	"finishedAt":         true,
}

// shiftJSON moves every time field of a JSON document by shift.
func shiftJSON(doc []byte, shift time.Duration) ([]byte, error) {
	if len(doc) == 0 || shift == 0 {
		return doc, nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	shiftValue(v, shift)
	return json.Marshal(v)
}

func shiftValue(v any, shift time.Duration) {
	switch v := v.(type) {
	case map[string]any:
		for key, item := range v {
			if s, ok := item.(string); ok && timeKeys[key] {
				// The zero time means "unset" to upstream (IsZero): it stays.
				if t, err := time.Parse(time.RFC3339Nano, s); err == nil && !t.IsZero() {
					v[key] = t.Add(shift).UTC().Format(time.RFC3339Nano)
				}
				continue
			}
			shiftValue(item, shift)
		}
	case []any:
		for _, item := range v {
			shiftValue(item, shift)
		}
	}
}
