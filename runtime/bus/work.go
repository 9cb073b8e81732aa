package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Sample is one work item: one sample of one item of an accepted request. TrajectoryID names it everywhere
// (its work item's message id, its result's subject), and stays the same when another node runs it again.
type Sample struct {
	Consumer     string `json:"consumer"`
	Request      string `json:"request"`
	ItemID       string `json:"item_id"`
	Index        int    `json:"index"`
	GroupID      string `json:"group_id,omitempty"`
	TrajectoryID string `json:"trajectory_id"`
	// Samples is the number of samples of the request: when that many results are stored, the request is done.
	Samples int `json:"samples"`
	// Body is what the runner needs to run the sample (the item, the agent, sampling overrides); opaque here.
	Body json.RawMessage `json:"body,omitempty"`
}

func (s Sample) validate() error {
	switch {
	case s.Consumer == "" || s.Request == "" || s.TrajectoryID == "":
		return fmt.Errorf("bus: sample %q of request %q (consumer %q): consumer, request and trajectory id are required", s.TrajectoryID, s.Request, s.Consumer)
	case s.Samples < 1:
		return fmt.Errorf("bus: sample %q: samples must be >= 1, got %d", s.TrajectoryID, s.Samples)
	}
	return nil
}

// Request is an accepted request as the bus keeps it: who sent it, how many samples it has, and the caller's
// record of it (the journal entry a restart or another node needs; opaque here).
type Request struct {
	Consumer string          `json:"consumer"`
	ID       string          `json:"id"`
	Samples  int             `json:"samples"`
	Body     json.RawMessage `json:"body,omitempty"`
	// FannedOut is set once every sample's work item is stored.
	FannedOut bool `json:"fanned_out,omitempty"`
	// Cancelled is set by Cancel.
	Cancelled bool `json:"cancelled,omitempty"`
	// DoneAcked is set by MarkDoneAcked.
	DoneAcked bool `json:"done_acked,omitempty"`
}

// Submitted says what Submit did.
type Submitted struct {
	// Duplicate: the consumer had already submitted a request with this id; nothing new was accepted.
	Duplicate bool
	// Stored is the number of work items stored by this call (0 for a duplicate whose fan-out was complete).
	Stored int
}

// Submit accepts a request: its record goes to the request bucket (a second submit of the same consumer and id
// finds it and stores nothing), then one work item per sample goes to the work stream with the trajectory id as
// its Nats-Msg-Id, so a fan-out re-published within duplicate_window stores nothing either. A submit that finds
// its request's fan-out unfinished (the process died in between) publishes it again. When Submit returns
// without error, the request and every sample are stored (on a quorum of replicas).
func (b *Bus) Submit(ctx context.Context, req Request, samples []Sample) (Submitted, error) {
	if req.Consumer == "" || req.ID == "" {
		return Submitted{}, errors.New("bus: submit: consumer and request id are required")
	}
	if req.Samples != len(samples) {
		return Submitted{}, fmt.Errorf("bus: submit %q: the request has %d samples, %d given", req.ID, req.Samples, len(samples))
	}
	for _, s := range samples {
		if err := s.validate(); err != nil {
			return Submitted{}, err
		}
		if s.Consumer != req.Consumer || s.Request != req.ID || s.Samples != req.Samples {
			return Submitted{}, fmt.Errorf("bus: submit %q: sample %q belongs to another request", req.ID, s.TrajectoryID)
		}
	}
	var out Submitted
	stored := 0
	mine := false // an earlier attempt's Create may have stored the record: finding it then is not a duplicate
	err := retryTransient(ctx, b.log, "submit "+req.ID, func(ctx context.Context) (err error) {
		out, err = b.submitOnce(ctx, req, samples, &mine)
		stored += out.Stored
		return err
	})
	out.Stored = stored
	return out, err
}

// submitOnce is one attempt of Submit. mine is set once this call's Create stored the record or may have (it
// failed transiently); a later attempt that finds an equal record then takes it as its own, not as a duplicate.
func (b *Bus) submitOnce(ctx context.Context, req Request, samples []Sample, mine *bool) (Submitted, error) {
	key := requestKey(req.Consumer, req.ID)
	req.FannedOut = false
	val, err := json.Marshal(req)
	if err != nil {
		return Submitted{}, fmt.Errorf("bus: submit %q: %w", req.ID, err)
	}
	var out Submitted
	found := false
	rev, err := b.requests.Create(ctx, key, val)
	if err == nil || transient(err) {
		*mine = true
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		found = true
		e, err := b.requests.Get(ctx, key)
		if err != nil {
			return out, fmt.Errorf("bus: submit %q: read the request: %w", req.ID, err)
		}
		var prev Request
		if err := json.Unmarshal(e.Value(), &prev); err != nil {
			return out, fmt.Errorf("bus: submit %q: stored request: %w", req.ID, err)
		}
		out.Duplicate = !*mine || !sameSubmit(prev, req)
		if prev.FannedOut {
			return out, nil
		}
		req, rev = prev, e.Revision()
	} else if err != nil {
		return out, fmt.Errorf("bus: submit %q: %w", req.ID, err)
	}
	// A resumed fan-out (a record found unfinished) skips the samples whose results are stored.
	n, err := b.fanOut(ctx, rev, samples, found)
	out.Stored = n
	if err != nil {
		return out, fmt.Errorf("bus: submit %q: %w", req.ID, err)
	}
	req.FannedOut = true
	if val, err = json.Marshal(req); err == nil {
		_, err = b.requests.Update(ctx, key, val, rev)
	}
	if err != nil {
		return out, fmt.Errorf("bus: submit %q: mark the fan-out done: %w", req.ID, err)
	}
	return out, nil
}

// sameSubmit says whether stored is the record req's submit makes (before the fan-out's mark; a cancel or a done
// ack makes it another).
func sameSubmit(stored, req Request) bool {
	return stored.Consumer == req.Consumer && stored.ID == req.ID && stored.Samples == req.Samples &&
		bytes.Equal(stored.Body, req.Body) && !stored.Cancelled && !stored.DoneAcked
}

// fanOut publishes one work item per sample and returns how many were new. The message id is the trajectory id
// and the revision that created the request's record, so a request forgotten and submitted again is new. The
// items are published asynchronously and their acknowledgements awaited together (a request of 512 samples is one
// round trip's worth of waiting, not 512). resume: the fan-out is being finished after a process died in the
// middle of it; samples whose result is stored already are skipped.
func (b *Bus) fanOut(ctx context.Context, rev uint64, samples []Sample, resume bool) (int, error) {
	futures := make([]jetstream.PubAckFuture, 0, len(samples))
	ids := make([]string, 0, len(samples))
	for _, s := range samples {
		if resume {
			// A sample whose result is stored already (a fan-out published again after the first one ran) is done.
			if _, err := b.results.GetLastMsgForSubject(ctx, resultSubject(s.Consumer, s.Request, s.TrajectoryID)); err == nil {
				continue
			} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
				return 0, err
			}
		}
		body, err := json.Marshal(s)
		if err != nil {
			return 0, err
		}
		m := nats.NewMsg(workSubject(s.Consumer))
		m.Data = body
		f, err := b.js.PublishMsgAsync(m, jetstream.WithMsgID(s.TrajectoryID+"#"+strconv.FormatUint(rev, 10)), jetstream.WithExpectStream(WorkStream))
		if err != nil {
			return 0, fmt.Errorf("publish sample %q: %w", s.TrajectoryID, err)
		}
		futures = append(futures, f)
		ids = append(ids, s.TrajectoryID)
	}
	stored := 0
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			if !ack.Duplicate {
				stored++
			}
		case err := <-f.Err():
			return stored, fmt.Errorf("publish sample %q: %w", ids[i], err)
		case <-ctx.Done():
			return stored, fmt.Errorf("publish sample %q: %w", ids[i], context.Cause(ctx))
		}
	}
	return stored, nil
}

// Request returns the stored record of a request; found is false when there is none.
func (b *Bus) Request(ctx context.Context, consumer, id string) (r Request, found bool, err error) {
	e, err := b.requests.Get(ctx, requestKey(consumer, id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Request{}, false, nil
	}
	if err != nil {
		return Request{}, false, fmt.Errorf("bus: request %q: %w", id, err)
	}
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return Request{}, false, fmt.Errorf("bus: request %q: %w", id, err)
	}
	return r, true, nil
}

// The headers of a result message.
const (
	hdrTrajectory = "Agentrt-Trajectory"
	hdrItem       = "Agentrt-Item"
	hdrIndex      = "Agentrt-Index"
	hdrGroup      = "Agentrt-Group"
	hdrStatus     = "Agentrt-Status"
	hdrReason     = "Agentrt-Reason"
	hdrError      = "Agentrt-Error"
	hdrNode       = "Agentrt-Node"
	hdrDelivery   = "Agentrt-Delivery"
)

// The statuses of a result as the bus sees them.
const (
	// StatusFinished: a node ran the sample to its end; the trajectory carries its own status.
	StatusFinished = "finished"
	// StatusFailed: no node finished the sample within max_deliver claims; the trajectory is the runner's
	// failed trajectory (Node.Failed) or empty.
	StatusFailed = "failed"
)

// ReasonNodeLost is the reason of a failed result: every claim of the sample ended without a result.
const ReasonNodeLost = "node_lost"

// Result is one stored result: a finished (or failed) sample's trajectory.
type Result struct {
	Sample
	Status string
	Reason string // failed only
	Error  string // failed only
	// Node is the server name of the node that stored it; Delivery the claim it came from (1 = the first).
	Node     string
	Delivery int
	// Trajectory is the runner's JSON, opaque here.
	Trajectory json.RawMessage
}

// publishResult stores a sample's result unless one is stored already (dup is then true, nothing changes):
// at most one result per trajectory id, however many nodes finish the sample.
func (b *Bus) publishResult(ctx context.Context, r Result) (dup bool, _ error) {
	// The subject holds at most one message: a second publish is refused by the stream (10077), whether another
	// node stored the result or this one did and its acknowledgement was lost (a retry after a leader change).
	// Attempts with their own deadlines: a publish whose stream leader died is sent again once another is elected
	// (its resend is refused as above if the first one was stored after all).
	full := false
	err := retryTransient(ctx, b.log, "store "+r.TrajectoryID, func(ctx context.Context) error {
		_, err := b.js.PublishMsg(ctx, resultMsg(r), jetstream.WithExpectStream(ResultStream))
		full = isSubjectFull(err)
		if full {
			return nil
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("bus: store the result of %q: %w", r.TrajectoryID, err)
	}
	// Also on a duplicate: the node that stored the last result may have died before it closed the request.
	return full, b.closeIfDone(ctx, r.Sample)
}

// resultMsg is the message of a result: the trajectory, and what the outbox needs in headers.
func resultMsg(r Result) *nats.Msg {
	m := nats.NewMsg(resultSubject(r.Consumer, r.Request, r.TrajectoryID))
	m.Data = r.Trajectory
	m.Header.Set(hdrTrajectory, r.TrajectoryID)
	m.Header.Set(hdrItem, r.ItemID)
	m.Header.Set(hdrIndex, strconv.Itoa(r.Index))
	m.Header.Set(hdrGroup, r.GroupID)
	m.Header.Set(hdrStatus, r.Status)
	m.Header.Set(hdrNode, r.Node)
	m.Header.Set(hdrDelivery, strconv.Itoa(r.Delivery))
	if r.Reason != "" {
		m.Header.Set(hdrReason, r.Reason)
		m.Header.Set(hdrError, r.Error)
	}
	return m
}

// errCodeSubjectFull is JetStream's "maximum messages per subject exceeded" (DiscardNewPerSubject).
const errCodeSubjectFull jetstream.ErrorCode = 10077

func isSubjectFull(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == errCodeSubjectFull
}

// closeIfDone counts a stored result and stores the request's done marker once every sample has one. The count
// is a JetStream counter (one per request, O(1)): it is bumped after every store and every duplicate, so a node
// that died between storing a result and counting it is made up for by the next claim of that sample (which finds
// the result); it may count too many, never too few. Only when it reaches the request's samples are the results
// counted exactly (one subject per trajectory). Nodes that store the last two results at once may both see the
// request complete; the marker's subject takes one message, so one is stored.
func (b *Bus) closeIfDone(ctx context.Context, s Sample) error {
	m := nats.NewMsg(countSubject(s.Consumer, s.Request))
	m.Header.Set(hdrIncr, "1")
	// A resent increment may count twice: the count may run over, never under (above), so resending is safe.
	var ack *jetstream.PubAck
	err := retryTransient(ctx, b.log, "count "+s.TrajectoryID, func(ctx context.Context) (err error) {
		ack, err = b.js.PublishMsg(ctx, m) // (a counter increment takes no expectation headers)
		return err
	})
	if err != nil {
		return fmt.Errorf("bus: count the results of %q: %w", s.Request, err)
	}
	if n, err := strconv.Atoi(ack.Value); err != nil || n < s.Samples {
		return nil
	}
	var si *jetstream.StreamInfo
	err = retryTransient(ctx, b.log, "count "+s.TrajectoryID, func(ctx context.Context) (err error) {
		si, err = b.results.Info(ctx, jetstream.WithSubjectFilter(requestSubjects(s.Consumer, s.Request)+".t.*"))
		return err
	})
	if err != nil {
		return fmt.Errorf("bus: count the results of %q: %w", s.Request, err)
	}
	if len(si.State.Subjects) < s.Samples {
		return nil
	}
	done := nats.NewMsg(doneSubject(s.Consumer, s.Request))
	done.Header.Set(hdrStatus, "done")
	if err := retryTransient(ctx, b.log, "close "+s.Request, func(ctx context.Context) error {
		_, err := b.js.PublishMsg(ctx, done, jetstream.WithExpectStream(ResultStream))
		if isSubjectFull(err) {
			return nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("bus: close request %q: %w", s.Request, err)
	}
	return nil
}

// hdrIncr is JetStream's counter increment header.
const hdrIncr = "Nats-Incr"

// decodeResult reads a result message.
func decodeResult(consumer, request string, h nats.Header, data []byte) Result {
	idx, _ := strconv.Atoi(h.Get(hdrIndex))
	del, _ := strconv.Atoi(h.Get(hdrDelivery))
	return Result{
		Sample: Sample{Consumer: consumer, Request: request, ItemID: h.Get(hdrItem), Index: idx, GroupID: h.Get(hdrGroup),
			TrajectoryID: h.Get(hdrTrajectory)},
		Status: h.Get(hdrStatus), Reason: h.Get(hdrReason), Error: h.Get(hdrError), Node: h.Get(hdrNode), Delivery: del,
		Trajectory: data,
	}
}
