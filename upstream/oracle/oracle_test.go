package oracle

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"testing/synctest"
)

// maxTrace bounds one trace line read from standard input.
const maxTrace = 64 << 20

// TestOracle is the oracle's program: run as `oracle.test -test.run '^TestOracle$'`
// with PODSTATUS_ORACLE=1, it reads one trace document per line on standard input and
// writes, per trace, one line on standard output: {"report": ...} or {"error": "..."}.
// It is a test binary because only a test can own a synctest bubble, the clock the
// trace's time runs on (times.go).
func TestOracle(t *testing.T) {
	if os.Getenv("PODSTATUS_ORACLE") == "" {
		t.Skip("the oracle's program: run by podstatus with PODSTATUS_ORACLE=1")
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, err := readLine(in)
		if errors.Is(err, io.EOF) {
			return
		}
		var answer map[string]any
		if err != nil {
			answer = map[string]any{"error": err.Error()}
		} else {
			answer = replayLine(t, line)
		}
		text, _ := json.Marshal(answer)
		out.Write(append(text, '\n'))
		if err := out.Flush(); err != nil {
			t.Fatalf("writing a report: %v", err)
		}
	}
}

// readLine reads one line of at most maxTrace bytes; a longer one is read to its end
// and refused.
func readLine(in *bufio.Reader) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		part, err := in.ReadSlice('\n')
		if !tooLong && len(line)+len(part) > maxTrace {
			tooLong, line = true, nil
		}
		if !tooLong {
			line = append(line, part...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !(errors.Is(err, io.EOF) && (len(line) > 0 || tooLong)) {
			return nil, err
		}
		if tooLong {
			return nil, fmt.Errorf("a trace of more than %d bytes", maxTrace)
		}
		return line, nil
	}
}

// replayLine runs one trace in a bubble of its own.
func replayLine(t *testing.T, line []byte) (answer map[string]any) {
	trace, err := ParseTrace(line)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	synctest.Test(t, func(*testing.T) {
		defer func() {
			if p := recover(); p != nil {
				answer = map[string]any{"error": fmt.Sprintf("upstream panicked: %v", p)}
			}
		}()
		report, err := Run(trace)
		if err != nil {
			answer = map[string]any{"error": err.Error()}
			return
		}
		answer = map[string]any{"report": json.RawMessage(report)}
	})
	return answer
}
