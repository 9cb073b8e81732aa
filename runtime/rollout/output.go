package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/agentrt/agentrt/tito"
)

// The batch output file of `agentrt run`: one trajectory per JSON line, in completion order. Writer appends them
// durably; ReadFinished and DropTrajectories let a re-run complete the file.

// Writer writes each trajectory line with one write as it finishes: once write returns, the line is in
// the file and survives a kill -9 of the process. A background goroutine fsyncs after writes (group commit: one
// fsync for whatever was written meanwhile, at most every fsyncEvery), so a machine crash loses at most the
// last moments' lines, which a re-run completes; finishedIDs drops a line cut short.
type Writer struct {
	f      *os.File
	dirty  chan struct{} // a write is waiting for an fsync
	stop   chan struct{} // closed by close
	synced chan struct{} // closed when the fsync goroutine has exited
	mu     sync.Mutex
	err    error  // the first write or fsync error
	buf    []byte // the line being written (Write is called one at a time)
}

// fsyncEvery spaces fsyncs: each one also commits the filesystem's journal and holds up writes meanwhile, so
// back-to-back fsyncs cost a fast run ~12% of its episodes/s; at 10 a second they cost nothing measurable.
const fsyncEvery = 100 * time.Millisecond

// NewWriter writes to f, which is open for appending; Close closes it.
func NewWriter(f *os.File) *Writer {
	d := &Writer{f: f, dirty: make(chan struct{}, 1), stop: make(chan struct{}), synced: make(chan struct{})}
	go func() {
		defer close(d.synced)
		for {
			select {
			case <-d.dirty:
			case <-d.stop:
				return
			}
			next := time.Now().Add(fsyncEvery)
			if err := f.Sync(); err != nil {
				d.fail(fmt.Errorf("fsync %s: %w", f.Name(), err))
			}
			t := time.NewTimer(time.Until(next))
			select {
			case <-t.C:
			case <-d.stop:
				t.Stop()
				return
			}
		}
	}()
	return d
}

func (d *Writer) fail(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		d.err = err
	}
}

// Write appends t as one line; it reports an earlier write or fsync failure too. Not safe for concurrent use:
// RunBatch hands trajectories over one at a time.
func (d *Writer) Write(t *tito.Trajectory) error {
	// AppendJSON writes the trajectory directly (json.Marshal would re-validate every byte of it).
	b, err := t.AppendJSON(d.buf[:0])
	if err != nil {
		return err
	}
	d.buf = append(b, '\n')
	return d.write(d.buf)
}

// write appends b (whole lines) to the file; it reports an earlier fsync failure too.
func (d *Writer) write(b []byte) error {
	if _, err := d.f.Write(b); err != nil {
		d.fail(fmt.Errorf("write %s: %w", d.f.Name(), err))
	}
	select {
	case d.dirty <- struct{}{}:
	default: // an fsync is already due; it covers this write
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// Close waits for the background fsync, fsyncs once more and closes the file. No write may follow.
func (d *Writer) Close() error {
	close(d.stop)
	<-d.synced
	if err := d.f.Sync(); err != nil {
		d.fail(fmt.Errorf("fsync %s: %w", d.f.Name(), err))
	}
	if err := d.f.Close(); err != nil {
		d.fail(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// ReadFinished reads the trajectory ids already in the output file out, each with its "status/status_reason" (none
// when out does not exist). A last line cut
// short by a crash is dropped (the file is truncated to its last complete line) so that appending keeps the
// file valid JSONL.
func ReadFinished(out string) (map[string]string, error) {
	done := map[string]string{}
	b, err := os.ReadFile(out)
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, err
	}
	if n := len(b); n > 0 && b[n-1] != '\n' {
		cut := bytes.LastIndexByte(b, '\n') + 1
		if err := os.Truncate(out, int64(cut)); err != nil {
			return nil, err
		}
		b = b[:cut]
	}
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var t struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			StatusReason string `json:"status_reason"`
		}
		if err := json.Unmarshal(line, &t); err != nil || t.ID == "" {
			return nil, fmt.Errorf("%s:%d: not a trajectory line (want JSON with an \"id\"): refusing to append to it", out, i+1)
		}
		done[t.ID] = t.Status + "/" + t.StatusReason
	}
	return done, nil
}

// DropTrajectories rewrites out without the trajectories of the given ids (through a temporary file renamed over it,
// so that a crash leaves either file whole).
func DropTrajectories(out string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	drop := map[string]bool{}
	for _, id := range ids {
		drop[id] = true
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	var kept []byte
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		var t struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(line, &t) == nil && drop[t.ID] {
			continue
		}
		kept = append(kept, line...)
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, kept, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}
