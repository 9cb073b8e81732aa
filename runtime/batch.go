package runtime

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

	"github.com/agentrt/agentrt/tito"
)

// Item is one prompt of a rollout request: a JSON line of `agentrt run`'s --prompts file, or an item of a
// WebSocket rollout request.
type Item struct {
	ID string `json:"id"`
	// Messages is the conversation so far (OpenAI-style); Prompt is a shorthand for one user message.
	Messages []tito.Message `json:"messages,omitempty"`
	Prompt   string         `json:"prompt,omitempty"`
	// N is the number of samples (default 1); they share a group id.
	N        int             `json:"n,omitempty"`
	Label    json.RawMessage `json:"label,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Sampling overrides the agent's sampling params.
	Sampling *Sampling `json:"sampling_params,omitempty"`
}

// Validate checks an item; where names it in errors (e.g. "prompts.jsonl:3").
func (it *Item) Validate(where string) error {
	if it.ID == "" {
		return fmt.Errorf("%s: item has no \"id\"", where)
	}
	if len(it.Messages) == 0 && it.Prompt == "" {
		return fmt.Errorf("%s: item %q has neither \"messages\" nor \"prompt\"", where, it.ID)
	}
	if len(it.Messages) > 0 && it.Prompt != "" {
		return fmt.Errorf("%s: item %q has both \"messages\" and \"prompt\"", where, it.ID)
	}
	if it.N < 0 {
		return fmt.Errorf("%s: item %q: n must be >= 1", where, it.ID)
	}
	if it.Sampling != nil {
		if err := it.Sampling.Validate(); err != nil {
			return fmt.Errorf("%s: item %q: sampling_params: %w", where, it.ID, err)
		}
	}
	return nil
}

// Episodes expands the item into its samples. groupPrefix scopes the group id (a request id under serve).
func (it *Item) Episodes(groupPrefix string) []Episode {
	msgs := it.Messages
	if it.Prompt != "" {
		msgs = []tito.Message{{Role: "user", Content: it.Prompt}}
	}
	n := max(it.N, 1)
	group := groupPrefix + it.ID
	eps := make([]Episode, n)
	shared := &sharedPrompt{} // one agent runs all of an item's samples
	for k := range n {
		eps[k] = Episode{ID: fmt.Sprintf("%s#%d", group, k), ItemID: it.ID, GroupID: group, SampleIndex: k,
			Messages: msgs, Label: it.Label, Metadata: it.Metadata, Sampling: it.Sampling, firstPrompt: shared}
	}
	return eps
}

// ReadItems reads JSON lines of items from r; name is used in errors ("FILE:LINE: ..."). Blank lines are skipped.
func ReadItems(r io.Reader, name string) ([]Item, error) {
	var items []Item
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, line)
		var it Item
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
func RunBatch(ctx context.Context, a *Agent, eps []Episode, concurrency int, emit func(*tito.Trajectory) error, progress func(Stats)) error {
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
				if ctx.Err() != nil && t.Status == StatusAborted {
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
		return fmt.Errorf("runtime: writing trajectories: %w", emitErr)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("runtime: batch interrupted after %d of %d episodes: %w", st.Done, st.Total, err)
	}
	return nil
}
