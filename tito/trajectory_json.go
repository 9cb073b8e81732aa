package tito

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/agentrt/agentrt/internal/jsonw"
)

// Mask is a loss mask: 1 on tokens the model sampled, 0 elsewhere. It encodes to JSON as an array of 0/1
// (not base64, as []uint8 otherwise would).
type Mask []uint8

// MarshalJSON implements json.Marshaler.
func (m Mask) MarshalJSON() ([]byte, error) {
	return jsonw.AppendInts(make([]byte, 0, 2*len(m)+2), m), nil
}

// UnmarshalJSON implements json.Unmarshaler: an array of 0 and 1, or null.
func (m *Mask) UnmarshalJSON(b []byte) error {
	var v []int
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("tito: loss_mask: %w", err)
	}
	if v == nil {
		*m = nil
		return nil
	}
	out := make(Mask, len(v))
	for i, x := range v {
		if x != 0 && x != 1 {
			return fmt.Errorf("tito: loss_mask[%d] is %d, want 0 or 1", i, x)
		}
		out[i] = uint8(x)
	}
	*m = out
	return nil
}

// Logprobs are per-token logprobs in which NaN means "none" (JSON null). Values round-trip bit for bit.
type Logprobs []float64

// MarshalJSON implements json.Marshaler: NaN is null, every other value is written so that it parses back to
// the same bits. Infinities are an error (they are not JSON and never valid logprobs here).
func (l Logprobs) MarshalJSON() ([]byte, error) {
	return appendLogprobs(make([]byte, 0, 12*len(l)+2), l)
}

// UnmarshalJSON implements json.Unmarshaler: null entries become NaN.
func (l *Logprobs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*l = nil
		return nil
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return errors.New("tito: logprobs: want an array of numbers and nulls")
	}
	body := bytes.TrimSpace(b[1 : len(b)-1])
	out := make(Logprobs, 0, bytes.Count(body, []byte{','})+1)
	for i := 0; len(body) > 0; i++ {
		item, rest, found := bytes.Cut(body, []byte{','})
		item = bytes.TrimSpace(item)
		if string(item) == "null" {
			out = append(out, math.NaN())
		} else {
			f, err := strconv.ParseFloat(string(item), 64)
			if err != nil || !jsonNumberBytes(item) {
				return fmt.Errorf("tito: logprobs[%d]: %q is not a number or null", i, item)
			}
			out = append(out, f)
		}
		body = bytes.TrimSpace(rest)
		if found && len(body) == 0 {
			return fmt.Errorf("tito: logprobs: trailing comma after element %d", i)
		}
	}
	*l = out
	return nil
}

// jsonNumberBytes reports whether b uses only the characters of a JSON number and starts like one (the
// grammar is left to strconv.ParseFloat, which would also take "Inf", hex floats and underscores).
func jsonNumberBytes(b []byte) bool {
	if len(b) == 0 || (b[0] != '-' && (b[0] < '0' || b[0] > '9')) {
		return false
	}
	for _, c := range b {
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			return false
		}
	}
	return true
}

// appendLogprobs writes l with NaN as null and -0 as -0.0 (jsonw's policy: "-0" would read back as the integer 0
// in Python, losing the sign bit).
func appendLogprobs(b []byte, l []float64) ([]byte, error) {
	b = append(b, '[')
	for i, f := range l {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsInf(f, 0) {
			return nil, fmt.Errorf("tito: logprobs[%d] is %v, which JSON cannot carry", i, f)
		}
		b = jsonw.AppendFloat(b, f)
	}
	return append(b, ']'), nil
}

// MarshalJSON implements json.Marshaler; see AppendJSON.
func (t Trajectory) MarshalJSON() ([]byte, error) {
	return t.AppendJSON(make([]byte, 0, 64+24*len(t.TokenIDs)))
}

// AppendJSON appends the trajectory's JSON object to b: the fields of the struct tags, in their order, with
// token_ids, loss_mask and logprobs written by hand (the hot part; a 4k-token trajectory is about 60 KB).
// Logprobs that are NaN are written as null.
//
// # Errors
//
// An infinite logprob, or a provenance, metrics or messages value that encoding/json rejects.
func (t *Trajectory) AppendJSON(b []byte) ([]byte, error) {
	var err error
	field := func(name string, v any, omitEmpty bool) {
		if err != nil {
			return
		}
		var raw []byte
		raw, err = json.Marshal(v)
		if err != nil {
			err = fmt.Errorf("tito: trajectory %s: %w", name, err)
			return
		}
		if omitEmpty && (string(raw) == `""` || string(raw) == "null" || string(raw) == "{}" || string(raw) == "[]" || string(raw) == "false") {
			return
		}
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b = append(b, raw...)
	}
	b = append(b, '{')
	raw, jerr := json.Marshal(t.ID)
	if jerr != nil {
		return nil, jerr
	}
	b = append(b, `"id":`...)
	b = append(b, raw...)
	field("item_id", t.ItemID, true)
	field("group_id", t.GroupID, true)
	field("sample_index", t.SampleIndex, false)
	field("status", t.Status, false)
	field("status_reason", t.StatusReason, true)
	field("error", t.Error, true)
	field("stop_message", t.StopMessage, true)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"token_ids":`...)
	b = jsonw.AppendInts(b, t.TokenIDs)
	b = append(b, `,"loss_mask":`...)
	b = jsonw.AppendInts(b, t.LossMask)
	b = append(b, `,"logprobs":`...)
	if b, err = appendLogprobs(b, t.Logprobs); err != nil {
		return nil, err
	}
	field("weight_versions", t.WeightVersions, true)
	field("offpolicy_masked", t.OffPolicyMasked, true)
	if err != nil {
		return nil, err
	}
	segs := t.Segments
	if segs == nil {
		segs = []Segment{}
	}
	field("segments", segs, false)
	field("messages", rawOrNull(t.Messages), false)
	field("reward", t.Reward, false)
	field("label", rawOrNull(t.Label), true)
	field("metadata", rawOrNull(t.Metadata), true)
	prov := t.Provenance
	if prov == nil {
		prov = map[string]any{}
	}
	field("provenance", prov, false)
	field("metrics", t.Metrics, true)
	field("warnings", t.Warnings, true)
	field("drift", t.Drift, true)
	if err != nil {
		return nil, err
	}
	if len(t.Samples) > 0 {
		field("tools", t.Tools, true)
		field("chat_template_kwargs", t.TemplateKwargs, true)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"samples":[`...)
		for i, s := range t.AllSamples() {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendSample(b, &s); err != nil {
				return nil, fmt.Errorf("tito: trajectory sample %d: %w", i, err)
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// appendSample writes one entry of "samples": its origin, then its chain and messages.
func appendSample(b []byte, s *Sample) ([]byte, error) {
	origin, err := json.Marshal(s.SampleOrigin)
	if err != nil {
		return nil, err
	}
	b = append(b, origin[:len(origin)-1]...) // the origin's fields, the object left open
	b = append(b, `,"token_ids":`...)
	b = jsonw.AppendInts(b, s.TokenIDs)
	b = append(b, `,"loss_mask":`...)
	b = jsonw.AppendInts(b, s.LossMask)
	b = append(b, `,"logprobs":`...)
	if b, err = appendLogprobs(b, s.Logprobs); err != nil {
		return nil, err
	}
	if len(s.WeightVersions) > 0 {
		raw, err := json.Marshal(s.WeightVersions)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"weight_versions":`...)
		b = append(b, raw...)
	}
	segs := s.Segments
	if segs == nil {
		segs = []Segment{}
	}
	raw, err := json.Marshal(segs)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"segments":`...)
	b = append(b, raw...)
	b = append(b, `,"messages":`...)
	b = append(b, rawOrNull(s.Messages)...)
	if len(s.Tools) > 0 {
		if raw, err = json.Marshal(s.Tools); err != nil {
			return nil, err
		}
		b = append(b, `,"tools":`...)
		b = append(b, raw...)
	}
	return append(b, '}'), nil
}

func rawOrNull(r json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(r)) == 0 {
		return json.RawMessage("null")
	}
	return r
}

// trajectoryJSON decodes with the struct tags of Trajectory (a defined type has no methods, so no recursion).
type trajectoryJSON Trajectory

// UnmarshalJSON implements json.Unmarshaler. It restores the trajectory's append state (the pending prompt
// and turn count) from its segments, so that a trajectory read back can be validated or appended to.
//
// # Errors
//
// Invalid JSON, a loss mask entry other than 0/1, a missing token_ids field, or a "samples" list whose last entry
// is not the trajectory's own chain (or that has one entry: one sample is written without the list). The invariants are not
// checked here: call Validate.
func (t *Trajectory) UnmarshalJSON(b []byte) error {
	var w struct {
		trajectoryJSON
		Samples json.RawMessage `json:"samples"` // Trajectory's own Samples field is "-"
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("tito: trajectory: %w", err)
	}
	v := w.trajectoryJSON
	if v.TokenIDs == nil {
		var probe map[string]json.RawMessage
		if json.Unmarshal(b, &probe) == nil {
			if _, ok := probe["token_ids"]; !ok {
				return errors.New(`tito: trajectory: no "token_ids" field`)
			}
		}
	}
	*t = Trajectory(v)
	t.restoreState()
	if len(w.Samples) > 0 && string(w.Samples) != "null" {
		return t.decodeSamples(w.Samples)
	}
	return nil
}

// restoreState recomputes pending and turns from the segments and logprobs.
func (t *Trajectory) restoreState() {
	t.turns = 0
	for _, s := range t.Segments {
		if s.Kind == KindResponse {
			t.turns++
		}
	}
	n := len(t.TokenIDs)
	t.pending = n
	if k := len(t.Segments); k > 0 && t.Segments[k-1].Kind == KindPrompt && len(t.Logprobs) == n && n > 0 && math.IsNaN(t.Logprobs[n-1]) {
		if off := t.Segments[k-1].Offset; off >= 0 && off < n { // an invalid offset is left to Validate
			t.pending = off
		}
	}
}
