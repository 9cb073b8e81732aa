package rollout

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/tito"
)

// ReadItems reads JSON lines of items from r; name is used in errors ("FILE:LINE: ..."). Blank lines are skipped.
func ReadItems(r io.Reader, name string) ([]runtime.Item, error) {
	var items []runtime.Item
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, line)
		var it runtime.Item
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&it); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if err := it.Validate(where); err != nil {
			return nil, err
		}
		if prev, dup := seen[it.ID]; dup {
			return nil, fmt.Errorf("%s: duplicate id %q (first on line %d)", where, it.ID, prev)
		}
		seen[it.ID] = line
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return items, nil
}

// Stats are live counters of a batch run, for progress display.
type Stats struct {
	Total, Done int
	ByStatus    map[string]int
	Tokens      int64
	Elapsed     time.Duration
}

// RunBatch runs episodes with at most concurrency in flight and hands each finished trajectory to emit (in
// completion order, one at a time). When ctx is cancelled, no new episode starts, the ones in flight are aborted,
// and their trajectories are not emitted (so a re-run completes them); everything finished before is emitted.
// progress, if not nil, is called after each episode.
func RunBatch(ctx context.Context, a *runtime.Agent, eps []runtime.Episode, concurrency int, emit func(*tito.Trajectory) error, progress func(Stats)) error {
	if concurrency <= 0 {
		concurrency = 1
	}
	var (
		mu      sync.Mutex
		st      = Stats{Total: len(eps), ByStatus: map[string]int{}}
		emitErr error
		next    atomic.Int64
		wg      sync.WaitGroup
		start   = time.Now()
	)
	for range min(concurrency, len(eps)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(eps) || ctx.Err() != nil {
					return
				}
				t := a.Run(ctx, eps[i])
				if ctx.Err() != nil && t.Status == runtime.StatusAborted {
					return // interrupted: leave it for the next run
				}
				mu.Lock()
				if emitErr == nil {
					emitErr = emit(t)
				}
				st.Done++
				st.ByStatus[t.Status]++
				st.Tokens += int64(len(t.TokenIDs))
				st.Elapsed = time.Since(start)
				if progress != nil {
					progress(st)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if emitErr != nil {
		return fmt.Errorf("rollout: writing trajectories: %w", emitErr)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("rollout: batch interrupted after %d of %d episodes: %w", st.Done, st.Total, err)
	}
	return nil
}
