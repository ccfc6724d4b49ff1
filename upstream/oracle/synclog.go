package oracle

import (
	"flag"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// syncLog is the oracle's klog sink: it keeps what upstream says of the pods its batch
// syncs ("Sync pod status", podUID, at level 5, in every release), so that the order of
// a batch is read from upstream's own words; everything else is dropped, or written to
// standard error with PODSTATUS_ORACLE_LOG set.
type syncLog struct {
	synced  []types.UID
	verbose bool
	flags   *flag.FlagSet
}

var logs = newSyncLog()

func newSyncLog() *syncLog {
	l := &syncLog{verbose: os.Getenv("PODSTATUS_ORACLE_LOG") != "", flags: flag.NewFlagSet("klog", flag.ContinueOnError)}
	klog.InitFlags(l.flags)
	klog.SetLogger(logr.New(l))
	return l
}

// listen turns level 5 on (on: record the pods synced from now) or back off.
func (l *syncLog) listen(on bool) {
	l.synced = l.synced[:0]
	level := "0"
	if on {
		level = "5"
	}
	_ = l.flags.Set("v", level)
}

func (l *syncLog) Init(logr.RuntimeInfo)          {}
func (l *syncLog) Enabled(int) bool               { return true }
func (l *syncLog) WithValues(...any) logr.LogSink { return l }
func (l *syncLog) WithName(string) logr.LogSink   { return l }

func (l *syncLog) Info(level int, msg string, kv ...any) {
	if msg == "Sync pod status" {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == "podUID" {
				l.synced = append(l.synced, types.UID(fmt.Sprint(kv[i+1])))
			}
		}
	}
	if l.verbose {
		fmt.Fprintln(os.Stderr, append([]any{"I", msg}, kv...)...)
	}
}

func (l *syncLog) Error(err error, msg string, kv ...any) {
	if l.verbose {
		fmt.Fprintln(os.Stderr, append([]any{"E", msg, err}, kv...)...)
	}
}
