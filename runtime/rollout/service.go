package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// Controller is what the service needs of SGLang beyond /generate: pause and resume generation, load new
// weights. *sglang.Client implements it.
type Controller interface {
	PauseGeneration(ctx context.Context, server, mode string) error
	ContinueGeneration(ctx context.Context, server string) error
	UpdateWeightsFromDisk(ctx context.Context, server string, req *sglang.UpdateWeightsFromDiskRequest) (map[string]sglang.UpdateWeightsResponse, error)
}

// Observer receives what the service and its episodes do, for metrics. Its methods must be cheap and safe for
// concurrent use.
type Observer interface {
	// EpisodeQueued moves the number of episodes waiting for a slot; EpisodeFinished sees each trajectory.
	EpisodeQueued(delta int)
	EpisodeFinished(t *tito.Trajectory)
}

// Service runs the rollout requests of `agentrt serve`: it implements stream.Runner with the configured agents,
// one concurrency limit shared by every request (its slots are shared fairly between consumers, so one trainer's
// flood does not delay another's request), and a pause gate that holds new turns during weight updates.
type Service struct {
	agents   map[string]*runtime.Agent
	fallback string
	slots    *fairSlots
	gate     *turn.Gate
	ctl      Controller
	obs      Observer
	watch    *weightWatch // nil: no stale weight_version warning
	// eventSink receives the per-turn events of samples run over the bus (SetEventSink); nil: none are sent.
	eventSink func(consumer string, ev stream.EventFrame)
	inFlight  atomic.Int64
}

var _ stream.Runner = (*Service)(nil)

// NewService returns a service over agents (by name) with at most concurrency episodes at once. The gate must
// be the one the agents' models were built with (turn.Model.Gate), so Pause holds their turns.
func NewService(agents map[string]*runtime.Agent, concurrency int, gate *turn.Gate, ctl Controller, obs Observer) (*Service, error) {
	if len(agents) == 0 {
		return nil, errors.New("rollout: service needs at least one agent")
	}
	if concurrency <= 0 {
		return nil, fmt.Errorf("rollout: concurrency %d: must be > 0", concurrency)
	}
	s := &Service{agents: agents, slots: newFairSlots(concurrency), gate: gate, ctl: ctl, obs: obs}
	if len(agents) == 1 {
		for n := range agents {
			s.fallback = n
		}
	}
	return s, nil
}

// WarnStaleWeights makes the service warn (on log, and in StaleWeightConsumers) about a consumer whose
// trajectories carry one weight_version for at least after, over two or more requests: a sign that the SGLang
// server agentrt uses is not the one the trainer updates. Call it before serving; after <= 0 disables it.
func (s *Service) WarnStaleWeights(after time.Duration, log *slog.Logger) {
	if after > 0 {
		s.watch = newWeightWatch(after, log)
	}
}

// StaleWeightConsumers is the number of consumers WarnStaleWeights has warned about and whose weight_version
// has not changed since.
func (s *Service) StaleWeightConsumers() int {
	if s.watch == nil {
		return 0
	}
	return s.watch.stale()
}

// InFlight is the number of episodes running now.
func (s *Service) InFlight() int { return int(s.inFlight.Load()) }

func (s *Service) agent(name string) (*runtime.Agent, error) {
	if name == "" {
		name = s.fallback
	}
	if a := s.agents[name]; a != nil {
		return a, nil
	}
	var have []string
	for n := range s.agents {
		have = append(have, n)
	}
	if name == "" {
		return nil, fmt.Errorf("several agents are configured (%s): name one in \"agent\"", strings.Join(have, ", "))
	}
	return nil, fmt.Errorf("unknown agent %q (configured: %s)", name, strings.Join(have, ", "))
}

// decoded is a validated request, decoded once.
type decoded struct {
	agent    *runtime.Agent
	items    []runtime.Item
	sampling *turn.Sampling
}

func (s *Service) decode(req stream.RolloutRequest) (*decoded, error) {
	a, err := s.agent(req.Agent)
	if err != nil {
		return nil, err
	}
	d := &decoded{agent: a}
	if len(req.Sampling) > 0 && string(req.Sampling) != "null" {
		var sp turn.Sampling
		dec := json.NewDecoder(strings.NewReader(string(req.Sampling)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sp); err != nil {
			return nil, fmt.Errorf("sampling: %w", err)
		}
		if err := sp.Validate(); err != nil {
			return nil, fmt.Errorf("sampling: %w", err)
		}
		d.sampling = &sp
	}
	for i, it := range req.Items {
		msgs, err := tito.DecodeMessages(it.Messages)
		if err != nil {
			return nil, fmt.Errorf("items[%d] (%q): messages: %w", i, it.ID, err)
		}
		item := runtime.Item{ID: it.ID, Messages: msgs, N: it.N, Label: it.Label, Metadata: it.Metadata, Sampling: d.sampling,
			MaxResponseTokens: it.MaxResponseTokens}
		if err := item.Validate(fmt.Sprintf("items[%d]", i)); err != nil {
			return nil, err
		}
		d.items = append(d.items, item)
	}
	return d, nil
}

// Validate implements stream.Runner.
func (s *Service) Validate(req stream.RolloutRequest) error {
	_, err := s.decode(req)
	return err
}

// Run implements stream.Runner: every pending sample of every item becomes an episode; each finished trajectory
// goes to out.Finish (which spools it) as soon as it ends. Cancelling ctx aborts the request's episodes.
func (s *Service) Run(ctx context.Context, req stream.RolloutRequest, out stream.Emitter) error {
	d, err := s.decode(req)
	if err != nil {
		return err
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for _, it := range d.items {
		for _, ep := range it.Episodes(req.ID + "/") {
			if !req.Pending(ep.ItemID, ep.SampleIndex) {
				continue // finished before a restart: its trajectory is spooled or acked
			}
			// The same id when a restart runs the sample again, so the spool and the trainer dedupe it.
			ep.ID = fmt.Sprintf("%s/%s/%d", req.ID, it.ID, ep.SampleIndex)
			if req.Events {
				ep.Events = turnEvents(out, ep)
			}
			// In line for a slot; slots go to the consumer with the fewest episodes running (fairSlots).
			w := s.slots.enqueue(req.Consumer)
			if s.obs != nil {
				s.obs.EpisodeQueued(1)
			}
			err := s.slots.wait(ctx, w)
			if s.obs != nil {
				s.obs.EpisodeQueued(-1)
			}
			if err != nil {
				wg.Wait()
				return err
			}
			s.inFlight.Add(1)
			wg.Add(1)
			go func() {
				defer func() { s.slots.release(req.Consumer); s.inFlight.Add(-1); wg.Done() }()
				t := d.agent.Run(ctx, ep)
				if s.obs != nil {
					s.obs.EpisodeFinished(t)
				}
				if s.watch != nil {
					s.watch.observe(req.Consumer, req.ID, t)
				}
				b, err := t.AppendJSON(nil)
				if err == nil {
					err = out.Finish(context.WithoutCancel(ctx), stream.Finished{ItemID: ep.ItemID, SampleIndex: ep.SampleIndex,
						GroupID: ep.GroupID, TrajectoryID: ep.ID, Trajectory: b})
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("rollout: episode %s: %w", ep.ID, err)
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	return firstErr
}

// Pause implements stream.Runner: no new turn starts until Resume; SGLang is paused with mode (abort: running
// generations end as aborted, or under partial_rollout = "resume" continue after Resume; retract and in_place
// keep them).
func (s *Service) Pause(ctx context.Context, mode string) error {
	s.gate.Close()
	if s.ctl == nil {
		return nil
	}
	if err := s.ctl.PauseGeneration(ctx, "", mode); err != nil {
		return fmt.Errorf("rollout: pause: %w", err)
	}
	return nil
}

// Resume implements stream.Runner.
func (s *Service) Resume(ctx context.Context) error {
	if s.ctl != nil {
		if err := s.ctl.ContinueGeneration(ctx, ""); err != nil {
			return fmt.Errorf("rollout: resume: %w", err)
		}
	}
	s.gate.Open()
	return nil
}

// UpdateWeights implements stream.Runner through SGLang's /update_weights_from_disk.
func (s *Service) UpdateWeights(ctx context.Context, req stream.UpdateWeightsRequest) error {
	if s.ctl == nil {
		return errors.New("rollout: no SGLang controller to update weights")
	}
	r := &sglang.UpdateWeightsFromDiskRequest{}
	if len(req.Options) > 0 && string(req.Options) != "null" {
		dec := json.NewDecoder(strings.NewReader(string(req.Options)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(r); err != nil {
			return fmt.Errorf("rollout: update_weights options: %w", err)
		}
	}
	r.ModelPath = req.ModelPath
	if req.WeightVersion != "" {
		v := req.WeightVersion
		r.WeightVersion = &v
	}
	if _, err := s.ctl.UpdateWeightsFromDisk(ctx, "", r); err != nil {
		return fmt.Errorf("rollout: update_weights: %w", err)
	}
	return nil
}

// turnEvents forwards an episode's steps to the request's consumer as per-turn events (docs/PROTOCOL.md section 6):
// best effort, dropped when the consumer is away or behind (stream.Emitter.Turn never blocks).
func turnEvents(out stream.Emitter, ep runtime.Episode) func(runtime.Event) {
	return func(ev runtime.Event) {
		b, err := json.Marshal(ev)
		if err != nil {
			return
		}
		out.Turn(stream.TurnEvent{ItemID: ep.ItemID, SampleIndex: ep.SampleIndex, Turn: ev.Turn, Data: b})
	}
}
