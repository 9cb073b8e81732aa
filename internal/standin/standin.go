// Package standin builds stand-in model folders for tests: Qwen3's vocabulary (the set-up folder named by
// $AGENTRT_QWEN3_MODEL) with a family's control tokens added as special tokens, the family's tokenizer_config.json
// (its bos/eos/pad/unk) and its reference chat template (tito/testdata/families/<family>).
//
// It is for families whose vocabulary no registry we reach has (Kimi K2, MiniMax-M2, Seed-OSS): with it their
// control tokens are single tokens, as in the real models, so whole episodes run through the agent loop against
// the emulator. A stand-in is not the real model: the ids and the BPE of ordinary text differ, so it says nothing
// about token counts or the real tokenizer's merges. What it covers is the loop: the template's deltas, the stop
// tokens (the EOS is one id the emulator ends on and the agent trims), the family's parser on what the model
// writes, and the emulator's format for the family.
//
// Only tests import it (internal/house checks).
package standin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/agentrt/agentrt/tito"
)

// Tokens lists, per family, every special-token-like marker the family's chat template writes or its parser
// reads, and the special tokens of its tokenizer_config.json (which tito.LoadModel requires in the vocabulary).
// A stand-in: the real models have these as special tokens too, but at other ids. Markers Qwen3's vocabulary has
// already as one token (Kimi's <|im_end|>, MiniMax's <think> and </think>) keep Qwen3's id; the others are added
// after Qwen3's last id.
var Tokens = map[string][]string{
	// Kimi K2 (July 2025 template; parser kimi_k2): the role headers, the tool-call section, the media markers
	// of image parts, and [BOS]/[PAD]/[UNK] of its tokenizer_config.json (eos is <|im_end|>).
	"kimi-k2": {
		"[BOS]", "[PAD]", "[UNK]",
		"<|im_system|>", "<|im_user|>", "<|im_assistant|>", "<|im_middle|>", "<|im_end|>",
		"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
		"<|tool_call_argument_begin|>", "<|tool_call_end|>",
		"<|media_start|>", "<|media_content|>", "<|media_pad|>", "<|media_end|>",
	},
	// MiniMax-M2 (parser minimax-m2): ]~!b[ (bos), ]~b] (a message's start), [e~[ (eos, a message's end),
	// ]!d~[ (unk), the tool-call block and the reasoning block.
	"minimax-m2": {
		"]~!b[", "]~b]", "[e~[", "]!d~[",
		"<minimax:tool_call>", "</minimax:tool_call>",
		"<think>", "</think>",
	},
	// Seed-OSS (parser seed_oss): bos/eos/pad, the tool-call block, the reasoning block and the thinking-budget
	// reflection the template writes for thinking_budget = 0.
	"seed-oss": {
		"<seed:bos>", "<seed:eos>", "<seed:pad>",
		"<seed:tool_call>", "</seed:tool_call>",
		"<seed:think>", "</seed:think>",
		"<seed:cot_budget_reflect>", "</seed:cot_budget_reflect>",
	},
}

// FamiliesDir is tito/testdata/families, the reference templates and tokenizer configs.
func FamiliesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "tito", "testdata", "families")
}

// Dir writes the stand-in model folder of family into a fresh t.TempDir() and returns it: tokenizer.json
// (Qwen3's, with the family's Tokens added as special tokens), the family's tokenizer_config.json and
// chat_template.jinja. It fails the test when $AGENTRT_QWEN3_MODEL is unset, when the family has no Tokens, or
// when a listed token does not encode as one token of the folder's tokenizer.
func Dir(t testing.TB, family string) string {
	t.Helper()
	list, ok := Tokens[family]
	if !ok {
		t.Fatalf("standin: no control tokens listed for family %q", family)
	}
	base := os.Getenv("AGENTRT_QWEN3_MODEL")
	if base == "" {
		t.Fatalf("$AGENTRT_QWEN3_MODEL is not set (the stand-in vocabulary is Qwen3's): run `make setup` and `source ~/.cache/agentrt/env.sh`")
	}
	data, err := os.ReadFile(filepath.Join(base, tito.FileTokenizer))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := addSpecialTokens(data, list)
	if err != nil {
		t.Fatalf("standin: %s: %v", filepath.Join(base, tito.FileTokenizer), err)
	}
	dir := t.TempDir()
	files := map[string][]byte{tito.FileTokenizer: tok}
	for _, f := range []string{tito.FileTokenizerConfig, tito.FileChatTemplate} {
		if files[f], err = os.ReadFile(filepath.Join(FamiliesDir(), family, f)); err != nil {
			t.Fatal(err)
		}
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := tito.LoadModel(dir)
	if err != nil {
		t.Fatalf("standin: %s: %v", family, err)
	}
	defer m.Close()
	for _, s := range list {
		id, ok := m.Tokenizer.TokenID(s)
		if got := m.Tokenizer.Encode(s, false); !ok || !slices.Equal(got, []int32{id}) {
			t.Fatalf("standin: %s: %q encodes as %v, want one token (id %d, present %v)", family, s, got, id, ok)
		}
	}
	return dir
}

// Model is Dir, loaded; it is closed when the test ends.
func Model(t testing.TB, family string) *tito.Model {
	t.Helper()
	m, err := tito.LoadModel(Dir(t, family))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// addSpecialTokens returns tokenizer.json data with each of tokens that is not already an added token appended
// to added_tokens as a special token, at ids after the highest id of the vocabulary and its added tokens.
func addSpecialTokens(data []byte, tokens []string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	var added []map[string]any
	if err := json.Unmarshal(doc["added_tokens"], &added); err != nil {
		return nil, err
	}
	var model struct {
		Vocab map[string]int64 `json:"vocab"`
	}
	if err := json.Unmarshal(doc["model"], &model); err != nil {
		return nil, err
	}
	next := int64(0)
	have := map[string]bool{}
	for _, id := range model.Vocab {
		next = max(next, id+1)
	}
	for _, a := range added {
		id, _ := a["id"].(float64)
		next = max(next, int64(id)+1)
		s, _ := a["content"].(string)
		have[s] = true
	}
	for _, s := range tokens {
		if have[s] {
			continue // already one token of the base vocabulary (Qwen3's <|im_end|>, <think>)
		}
		if _, ok := model.Vocab[s]; ok {
			continue
		}
		added = append(added, map[string]any{"id": next, "content": s, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
		have[s] = true
		next++
	}
	raw, err := json.Marshal(added)
	if err != nil {
		return nil, err
	}
	doc["added_tokens"] = raw
	return json.Marshal(doc)
}
