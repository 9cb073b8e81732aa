package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/tito"
)

// endHook subscribes to episode_end only and answers with a reward and a metric.
type endHook struct {
	reward float64
	metric string
	events []abi.Event
}

func (h *endHook) Subscribed(ev string) bool { return ev == abi.EventEpisodeEnd }
func (h *endHook) Handle(_ context.Context, ev *abi.Event) (abi.HookResponse, error) {
	h.events = append(h.events, *ev)
	r := h.reward
	return abi.HookResponse{Reward: &r, Metrics: map[string]float64{h.metric: 1}}, nil
}

// episode_end reaches every hook that subscribes to it (ABI.md 5.3), not only the reward plugin: each one's
// metrics land in the trajectory and the last reward set wins (the reward plugin runs last).
func TestEpisodeEndReachesEveryHook(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "tito", "testdata", "families", "glm-4.6", tito.FileChatTemplate))
	if err != nil {
		t.Fatal(err)
	}
	prof, _ := family.Lookup("glm-4.6")
	tmpl, err := tito.NewChatTemplate(string(src), tito.SpecialTokens{"eos_token": "<|endoftext|>"}, prof.TemplateOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	tok := byteTok{specials: []string{"[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>", "<|endoftext|>"}}
	p, _ := parsers.New(prof.Parser)
	for _, withReward := range []bool{false, true} {
		gen := &scriptGen{tok: tok, replies: []string{"\n<think></think>\n5"}, stops: []string{"<|user|>"}}
		h1, h2 := &endHook{reward: 0.25, metric: "first"}, &endHook{reward: 0.5, metric: "second"}
		deps := runtime.Deps{Model: &turn.Model{Generator: gen, Tokenizer: tok, Template: tmpl, Parser: nativeParser{p},
			StopIDs: []int32{tok.id("<|endoftext|>"), tok.id("<|observation|>"), tok.id("<|user|>")}, ContextWindow: 1 << 16},
			Hooks: []runtime.HookBinding{{Plugin: "h1", Hook: h1}, {Plugin: "h2", Hook: h2}}}
		rw := &endHook{reward: 1, metric: "reward_plugin"}
		if withReward {
			deps.Reward = &runtime.HookBinding{Plugin: "rw", Hook: rw}
		}
		a, err := runtime.NewAgent(defaultSettings(), deps)
		if err != nil {
			t.Fatal(err)
		}
		tr := a.Run(context.Background(), runtime.Episode{ID: "end", Label: []byte(`"5"`), Messages: []tito.Message{{Role: "user", Content: "2+3?"}}})
		if tr.Status != runtime.StatusCompleted {
			t.Fatalf("status %s/%s (%s)", tr.Status, tr.StatusReason, tr.Error)
		}
		for _, h := range []*endHook{h1, h2} {
			if len(h.events) != 1 || h.events[0].Status != runtime.StatusCompleted || string(h.events[0].Label) != `"5"` || len(h.events[0].Messages) == 0 {
				t.Errorf("hook %s saw %+v; want one episode_end with the status, label and messages", h.metric, h.events)
			}
		}
		wantReward := 0.5
		if withReward {
			wantReward = 1
		}
		if tr.Reward == nil || *tr.Reward != wantReward {
			t.Errorf("reward %v, want %v (the last to set it)", tr.Reward, wantReward)
		}
		if tr.Metrics["first"] != 1 || tr.Metrics["second"] != 1 || (withReward && tr.Metrics["reward_plugin"] != 1) {
			t.Errorf("metrics %v, want every hook's", tr.Metrics)
		}
	}
}
