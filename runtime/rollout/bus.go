package rollout

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/bus"
	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/tito"
)

// The bus binding: how a rollout request becomes the bus's work items, and how a node runs one (docs/scale-out.md).

// sampleBody is what a work item carries: enough for any node to run the sample.
type sampleBody struct {
	Agent    string          `json:"agent,omitempty"`
	Item     stream.Item     `json:"item"`
	Sampling json.RawMessage `json:"sampling,omitempty"`
	// Events: the consumer subscribed to per-turn events; the node running the sample sends them (EventSink).
	Events bool `json:"events,omitempty"`
}

// requestBody is what the bus keeps of an accepted request besides its counts: its agent, its number of items and a
// digest of the whole request (the bus tells a retry of the same submit from another submit reusing the id by the
// record). The items themselves travel in the work items, which are all a node needs; a copy of every item in the
// record made each sample's read of the record grow with the request.
type requestBody struct {
	Agent  string `json:"agent,omitempty"`
	Items  int    `json:"items"`
	SHA256 string `json:"sha256"`
}

// BusSamples makes the bus record of a request and one work item per sample, with the ids Service.Run gives
// them: group request/item, trajectory request/item/index.
func BusSamples(req stream.RolloutRequest) (bus.Request, []bus.Sample, error) {
	n := req.Samples()
	whole, err := json.Marshal(struct {
		Agent    string          `json:"agent,omitempty"`
		Items    []stream.Item   `json:"items"`
		Sampling json.RawMessage `json:"sampling,omitempty"`
		Events   bool            `json:"events,omitempty"`
	}{req.Agent, req.Items, req.Sampling, req.Events})
	if err != nil {
		return bus.Request{}, nil, fmt.Errorf("rollout: request %s: %w", req.ID, err)
	}
	sum := sha256.Sum256(whole)
	body, err := json.Marshal(requestBody{Agent: req.Agent, Items: len(req.Items), SHA256: hex.EncodeToString(sum[:])})
	if err != nil {
		return bus.Request{}, nil, fmt.Errorf("rollout: request %s: %w", req.ID, err)
	}
	r := bus.Request{Consumer: req.Consumer, ID: req.ID, Samples: n, Body: body}
	var out []bus.Sample
	for _, it := range req.Items {
		sb, err := json.Marshal(sampleBody{Agent: req.Agent, Item: it, Sampling: req.Sampling, Events: req.Events})
		if err != nil {
			return bus.Request{}, nil, fmt.Errorf("rollout: request %s: item %q: %w", req.ID, it.ID, err)
		}
		for k := range max(it.N, 1) {
			out = append(out, bus.Sample{Consumer: req.Consumer, Request: req.ID, ItemID: it.ID, Index: k,
				GroupID: req.ID + "/" + it.ID, TrajectoryID: fmt.Sprintf("%s/%s/%d", req.ID, it.ID, k), Samples: n, Body: sb})
		}
	}
	return r, out, nil
}

var _ bus.RunFunc = (*Service)(nil).RunSample

// RunSample implements bus.RunFunc: it runs one sample of a work item made by BusSamples with the service's
// agents, in one of its fair slots, and returns the trajectory. A later delivery runs the sample from the start
// under the same trajectory id. An error (an unknown agent, a bad item) makes the bus store a failed result.
func (s *Service) RunSample(ctx context.Context, smp bus.Sample, delivery int) (json.RawMessage, error) {
	var body sampleBody
	if err := json.Unmarshal(smp.Body, &body); err != nil {
		return nil, fmt.Errorf("rollout: work item %s: %w", smp.TrajectoryID, err)
	}
	d, err := s.decode(stream.RolloutRequest{ID: smp.Request, Consumer: smp.Consumer, Agent: body.Agent, Items: []stream.Item{body.Item}, Sampling: body.Sampling})
	if err != nil {
		return nil, err
	}
	it := d.items[0]
	eps := it.Episodes(smp.Request + "/")
	if smp.Index < 0 || smp.Index >= len(eps) {
		return nil, fmt.Errorf("rollout: work item %s: sample %d of an item with %d", smp.TrajectoryID, smp.Index, len(eps))
	}
	ep := eps[smp.Index]
	ep.ID = smp.TrajectoryID
	if body.Events && s.eventSink != nil {
		ep.Events = turnEvents(sinkEmitter{sink: s.eventSink, consumer: smp.Consumer, request: smp.Request}, ep)
	}
	w := s.slots.enqueue(smp.Consumer)
	if s.obs != nil {
		s.obs.EpisodeQueued(1)
	}
	err = s.slots.wait(ctx, w)
	if s.obs != nil {
		s.obs.EpisodeQueued(-1)
	}
	if err != nil {
		return nil, err
	}
	s.inFlight.Add(1)
	defer func() { s.slots.release(smp.Consumer); s.inFlight.Add(-1) }()
	t := d.agent.Run(ctx, ep)
	if s.obs != nil {
		s.obs.EpisodeFinished(t)
	}
	if s.watch != nil {
		s.watch.observe(smp.Consumer, smp.Request, t)
	}
	b, err := t.AppendJSON(nil)
	if err != nil {
		return nil, fmt.Errorf("rollout: episode %s: %w", ep.ID, err)
	}
	return b, nil
}

// SetEventSink makes RunSample send the per-turn events of samples whose consumer subscribed to them to sink
// (the bus, which hands them to the node serving the consumer). Call it before the first RunSample.
func (s *Service) SetEventSink(sink func(consumer string, ev stream.EventFrame)) { s.eventSink = sink }

// sinkEmitter is the stream.Emitter of a sample run over the bus: only its per-turn events go anywhere.
type sinkEmitter struct {
	sink              func(consumer string, ev stream.EventFrame)
	consumer, request string
}

func (e sinkEmitter) Finish(context.Context, stream.Finished) error {
	return fmt.Errorf("rollout: a sample run over the bus returns its trajectory; it does not finish it")
}

func (e sinkEmitter) Turn(ev stream.TurnEvent) {
	e.sink(e.consumer, stream.EventFrame{Type: stream.TypeEvent, RequestID: e.request, ItemID: ev.ItemID,
		SampleIndex: ev.SampleIndex, Turn: ev.Turn, Event: ev.Data})
}

// FailedSample implements bus.Node.Failed: the trajectory of a sample that will not run (its claims ran out, its
// runner failed, its request was cancelled before it ran) is a failed trajectory with the bus's reason, so the
// trainer gets one trajectory per sample and every group closes.
func FailedSample(smp bus.Sample, reason, msg string) json.RawMessage {
	t := tito.Trajectory{ID: smp.TrajectoryID, ItemID: smp.ItemID, GroupID: smp.GroupID, SampleIndex: smp.Index,
		Status: runtime.StatusFailed, StatusReason: reason, Error: msg}
	b, err := t.AppendJSON(nil)
	if err != nil {
		return nil
	}
	return b
}
