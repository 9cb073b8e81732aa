package turn

import (
	"testing"

	"github.com/agentrt/agentrt/runtime/family"
)

// TestSplitReasoning: each reasoning markup splits as the deployed server's reasoning parser returns a reply; gpt-oss's
// harmony messages by channel (analysis is reasoning, a message to a tool is neither, the rest is content).
func TestSplitReasoning(t *testing.T) {
	for _, tc := range []struct {
		name               string
		r                  family.Reasoning
		text               string
		reasoning, content string
	}{
		{"think", family.ReasoningThink, "<think>\nPlan.\n</think>\n\nAnswer.", "Plan.", "Answer."},
		{"think cut short", family.ReasoningThink, "<think>\nPlan", "Plan", ""},
		{"seed", family.ReasoningSeedThink, "<seed:think>Plan.</seed:think>Answer.", "Plan.", "Answer."},
		{"none", family.ReasoningNone, "<think>x</think> y", "", "<think>x</think> y"},
		{"harmony call", family.ReasoningHarmony,
			"<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
			"Need the weather.", ""},
		{"harmony call, recipient first", family.ReasoningHarmony,
			" to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}", "", ""},
		{"harmony final", family.ReasoningHarmony,
			"<|channel|>analysis<|message|>It is sunny.<|end|><|start|>assistant<|channel|>final<|message|>Sunny in Paris.",
			"It is sunny.", "Sunny in Paris."},
		{"harmony preamble and call", family.ReasoningHarmony,
			"<|channel|>analysis<|message|>A.<|end|><|start|>assistant<|channel|>commentary<|message|>Looking it up.<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}<|call|>",
			"A.", "Looking it up."},
		{"harmony two analyses", family.ReasoningHarmony,
			"<|channel|>analysis<|message|>One. <|end|><|start|>assistant<|channel|>analysis<|message|>Two.<|end|><|start|>assistant<|channel|>final<|message|> Done. <|return|>",
			"One. Two.", "Done."},
		{"harmony cut short in analysis", family.ReasoningHarmony, "<|channel|>analysis<|message|>Thinking about", "Thinking about", ""},
		{"harmony cut short in a header", family.ReasoningHarmony, "<|channel|>analysis<|message|>A.<|end|><|start|>assistant<|channel|>fin", "A.", ""},
		{"harmony normal text (no messages)", family.ReasoningHarmony, " The answer is 4. ", "", " The answer is 4. "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, c := SplitReasoning(tc.r, tc.text)
			if r != tc.reasoning || c != tc.content {
				t.Errorf("SplitReasoning(%s, %q) = %q, %q; want %q, %q", tc.r, tc.text, r, c, tc.reasoning, tc.content)
			}
		})
	}
}
