package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/plugins/sdk/abi"

	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/runtime/frontdoor"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// FrontdoorModel is the agent as the OpenAI-compatible front door serves it: its model, template, parser,
// sampling defaults and limits. The agent must have no tools (the front door's callers bring their own, and the
// parser would refuse calls of tools it was not given).
func (a *Agent) FrontdoorModel() (frontdoor.Model, error) {
	if len(a.d.Tools) > 0 {
		return frontdoor.Model{}, fmt.Errorf("agent %q has tools; the front door's agent must have none (its callers bring their own tools)", a.cfg.Name)
	}
	if a.d.Generator == nil {
		return frontdoor.Model{}, errors.New("runtime: agent without a generator")
	}
	m := frontdoor.Model{
		Name: a.cfg.Name, Generator: a.d.Generator, Tokenizer: a.d.Tokenizer, Template: a.d.Template, Parser: a.d.Parser,
		StopIDs: a.d.StopIDs, ExtraStopIDs: a.d.ExtraStopIDs, ContextWindow: a.d.ContextWindow, Kwargs: a.cfg.ChatTemplateKwargs,
		Provenance: a.d.Provenance, Reasoning: family.ReasoningNone,
	}
	if name, ok := a.d.Provenance[ProvFamily].(string); ok {
		if p, err := family.Lookup(name); err == nil {
			m.Reasoning = p.Reasoning
		}
	}
	if rb := a.d.Reward; rb != nil {
		m.Reward = func(ctx context.Context, msgs []tito.Message, status, reason string, label, metadata json.RawMessage) (*float64, map[string]float64, error) {
			ev := &abi.Event{Event: abi.EventEpisodeEnd, Status: status, StopReason: reason, Messages: hookMessages(msgs),
				Label: abi.RawJSON(label), Metadata: abi.RawJSON(metadata)}
			r, err := rb.Hook.Handle(ctx, ev)
			if err != nil {
				return nil, nil, fmt.Errorf("reward %s: %w", rb.Plugin, err)
			}
			return r.Reward, r.Metrics, nil
		}
	}
	s := a.cfg.Sampling
	m.Defaults = sglang.SamplingParams{MaxNewTokens: s.MaxNewTokens, Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK,
		MinP: s.MinP, RepetitionPenalty: s.RepetitionPenalty, FrequencyPenalty: s.FrequencyPenalty, PresencePenalty: s.PresencePenalty, Stop: s.Stop}
	if s.Seed != nil {
		v := int64(*s.Seed)
		m.Defaults.SamplingSeed = &v
	}
	return m, nil
}
