package viewer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/agentrt/agentrt/tito"
)

// filePoll is how often a followed file is checked for new lines.
const filePoll = 500 * time.Millisecond

// File is a JSONL file of trajectories as a Source: the lines `agentrt run --out` writes, or the trajectory frames
// of the stream ({"type": "trajectory", ..., "trajectory": {...}}) that a trainer saved. It indexes the file in
// the background (the page fills as it goes) and, when following, keeps reading the lines appended to it and
// starts over when the file is replaced or shrinks. A trajectory is read back from the file when the page asks
// for it, so a large file costs little memory. Safe for concurrent use.
type File struct {
	path   string
	follow bool

	mu        sync.Mutex
	f         *os.File
	cat       catalog
	off       int64 // the offset of the first line not indexed yet
	skipped   int
	firstSkip string
	hub       hub

	stop   chan struct{}
	exited chan struct{}
	idle   chan struct{} // closed once the whole file (as it was then) is indexed
}

// OpenFile opens path and starts indexing it; with follow it then keeps reading what is appended until Close.
//
// # Errors
//
// The file cannot be opened.
func OpenFile(path string, follow bool) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("viewer: %w", err)
	}
	s := &File{path: path, follow: follow, f: f, cat: newCatalog(), hub: newHub(), stop: make(chan struct{}),
		exited: make(chan struct{}), idle: make(chan struct{})}
	go s.run()
	return s, nil
}

// Indexed is closed once the file, as it was when opened, is indexed.
func (s *File) Indexed() <-chan struct{} { return s.idle }

// Close stops following, ends the page's event streams and closes the file.
func (s *File) Close() error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.exited
	s.hub.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.Close()
}

func (s *File) run() {
	defer close(s.exited)
	t := time.NewTicker(filePoll)
	defer t.Stop()
	first := true
	for {
		s.index()
		if first {
			close(s.idle)
			first = false
		}
		if !s.follow {
			return
		}
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.reopenIfReplaced()
	}
}

// index reads the complete lines after s.off; a last line without its newline waits for the next pass.
func (s *File) index() {
	s.mu.Lock()
	f, off := s.f, s.off
	s.mu.Unlock()
	r := bufio.NewReaderSize(io.NewSectionReader(f, off, 1<<62), 1<<20)
	line := 0
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		b, err := r.ReadBytes('\n')
		if err != nil { // io.EOF, with a partial line or none
			return
		}
		line++
		e, why := fileEntry(b, off)
		s.mu.Lock()
		if s.f != f { // replaced meanwhile: the next pass starts over
			s.mu.Unlock()
			return
		}
		off += int64(len(b))
		s.off = off
		if e == nil {
			if why != "" {
				if s.skipped == 0 {
					s.firstSkip = fmt.Sprintf("%s: byte %d: %s", s.path, off-int64(len(b)), why)
				}
				s.skipped++
			}
			s.mu.Unlock()
			continue
		}
		s.cat.put(e)
		sum := e.sum
		s.mu.Unlock()
		s.hub.publish(sum)
	}
}

// reopenIfReplaced starts over when the path now names another file, or the file shrank (rewritten in place).
func (s *File) reopenIfReplaced() {
	st, err := os.Stat(s.path)
	if err != nil {
		return // gone for now (being replaced): keep what we have
	}
	s.mu.Lock()
	cur, _ := s.f.Stat()
	if cur != nil && os.SameFile(cur, st) && st.Size() >= s.off {
		s.mu.Unlock()
		return
	}
	f, err := os.Open(s.path)
	if err != nil {
		s.mu.Unlock()
		return
	}
	s.f.Close()
	s.f, s.off, s.skipped, s.firstSkip = f, 0, 0, ""
	s.cat.reset()
	s.mu.Unlock()
	s.hub.lag(Summary{})
}

// fileEntry indexes one line; a blank line is skipped silently, anything else that is not a trajectory with why.
func fileEntry(b []byte, off int64) (*entry, string) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, ""
	}
	t, err := parseLine(b)
	if err != nil {
		return nil, err.Error()
	}
	return &entry{sum: summarize(t), off: off, n: len(b)}, ""
}

// parseLine reads a trajectory, or a stream frame that carries one.
func parseLine(b []byte) (*tito.Trajectory, error) {
	if !bytes.HasPrefix(bytes.TrimSpace(b), []byte(`{"type"`)) { // the stream writes frames type first
		t := new(tito.Trajectory)
		err := json.Unmarshal(b, t)
		if err == nil && t.ID != "" {
			return t, nil
		}
		if err == nil {
			err = errors.New(`no "id"`)
		}
		if t, ferr := parseFrame(b); ferr == nil {
			return t, nil
		}
		return nil, fmt.Errorf("neither a trajectory nor a trajectory frame: %v", err)
	}
	return parseFrame(b)
}

// parseFrame reads a trajectory frame of the stream: {"type": "trajectory", ..., "trajectory": {...}}.
func parseFrame(b []byte) (*tito.Trajectory, error) {
	var frame struct {
		Type         string          `json:"type"`
		TrajectoryID string          `json:"trajectory_id"`
		GroupID      string          `json:"group_id"`
		Trajectory   json.RawMessage `json:"trajectory"`
	}
	if err := json.Unmarshal(b, &frame); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if frame.Type != "trajectory" || len(frame.Trajectory) == 0 {
		return nil, fmt.Errorf("a %q frame, not a trajectory frame", frame.Type)
	}
	t := new(tito.Trajectory)
	if err := json.Unmarshal(frame.Trajectory, t); err != nil {
		return nil, fmt.Errorf("trajectory frame: %v", err)
	}
	if t.ID == "" {
		t.ID = frame.TrajectoryID
	}
	if t.GroupID == "" {
		t.GroupID = frame.GroupID
	}
	if t.ID == "" {
		return nil, errors.New("a trajectory frame without a trajectory id")
	}
	return t, nil
}

// Info implements Source.
func (s *File) Info() SourceInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SourceInfo{Kind: "file", Name: s.path, Skipped: s.skipped, FirstSkip: s.firstSkip}
}

// List implements Source.
func (s *File) List(f Filter, limit int) ([]Summary, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cat.list(f, limit)
}

// Get implements Source: the trajectory is read back from its line.
func (s *File) Get(id string) (*tito.Trajectory, error) {
	s.mu.Lock()
	e, f := s.cat.byID[id], s.f
	s.mu.Unlock()
	if e == nil {
		return nil, ErrNotFound
	}
	return readEntry(f, e)
}

func readEntry(f *os.File, e *entry) (*tito.Trajectory, error) {
	b := make([]byte, e.n)
	if _, err := f.ReadAt(b, e.off); err != nil {
		return nil, fmt.Errorf("viewer: read trajectory %s: %w", e.sum.ID, err)
	}
	t, err := parseLine(b)
	if err != nil {
		return nil, fmt.Errorf("viewer: trajectory %s changed in the file: %w", e.sum.ID, err)
	}
	return t, nil
}

// Group implements Source.
func (s *File) Group(id string) ([]*tito.Trajectory, error) {
	s.mu.Lock()
	es, f := s.cat.group(id), s.f
	s.mu.Unlock()
	out := make([]*tito.Trajectory, 0, len(es))
	for _, e := range es {
		t, err := readEntry(f, e)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Facets implements Source.
func (s *File) Facets() Facets {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cat.facets()
}

// Subscribe implements Source.
func (s *File) Subscribe() *Subscription { return s.hub.subscribe() }
