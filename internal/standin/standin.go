// Package standin builds stand-in model folders for tests: a set-up vocabulary (Qwen3's, $AGENTRT_QWEN3_MODEL, or
// the one Bases names for the family) with a family's control tokens added as special tokens, the family's
// tokenizer_config.json (its bos/eos/pad/unk) and its reference chat template (tito/testdata/families/<family>).
//
// It is for families whose vocabulary no registry we reach has (Kimi K2, MiniMax-M2, Seed-OSS, GLM-4.5/4.6/4.7,
// and Mistral Small 3.2 and Devstral, whose tekken v7 control tokens Nemo's tekken vocabulary lacks): with it their
// control tokens are single tokens, as in the real models, so whole episodes run through the agent loop against
// the emulator. A stand-in is not the real model: the added tokens' ids differ from the real ones, and so may the
// BPE of ordinary text (Qwen3's is another family's; Nemo's tekken is a generation older than Small 3.2's, whose
// file we do not have), so it says nothing about token counts or the real tokenizer's merges. What it covers is
// the loop: the template's deltas, the stop tokens (the EOS, or the stop that begins the next message, is one id
// the emulator ends on and the agent trims or keeps), the family's parser on what the model writes, and the
// emulator's format for the family.
//
// Only tests import it (internal/house checks).
package standin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/tito"
)

// Tokens lists, per family, every special-token-like marker the family's chat template writes or its parser
// reads, and the special tokens of its tokenizer_config.json (which tito.LoadModel requires in the vocabulary).
// A stand-in: the real models have these as special tokens too, but at other ids. Markers the base vocabulary has
// already as one token (Kimi's <|im_end|>, MiniMax's and GLM's <think> and </think>, Mistral's [INST]) keep the
// base's id; the others are added after the base's last id.
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
	// GLM-4.5/4.6 (parser glm45) and GLM-4.7 (glm47): the prompt's [gMASK]<sop>, the role tokens (<|user|> and
	// <|observation|> are also the stops that begin the next message), the eos <|endoftext|>, the reasoning, call
	// and result blocks, the key/value tags, and the /nothink the 4.5/4.6 template appends to user messages for
	// enable_thinking = false (a token of GLM's vocabulary too).
	"glm-4.6":       glm,
	"glm-4.7-flash": glm,
	// Mistral Small 3.2 and Devstral (parser mistral), on Nemo's tekken vocabulary (Bases): Nemo has the older
	// tekken control tokens as single tokens already; the tekken v7 ones their templates write ([SYSTEM_PROMPT],
	// [TOOL_CONTENT], [ARGS], [CALL_ID], [IMG] for image blocks) are added.
	"mistral-small-3.2": mistralV7,
	"devstral-small":    mistralV7,
}

var (
	glm = []string{
		"[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>", "<|endoftext|>",
		"<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
		"<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", "/nothink",
	}
	mistralV7 = []string{
		"<s>", "</s>", "<unk>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
		"[/TOOL_RESULTS]", "[TOOL_CALLS]",
		"[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]", "[ARGS]", "[CALL_ID]", "[IMG]",
	}
)

// Bases names, per family whose stand-in is not built on Qwen3's vocabulary, the environment variable of the
// set-up model folder whose tokenizer.json it starts from: Mistral Small 3.2 and Devstral start from Mistral
// Nemo's tekken vocabulary, the same family's tokenizer a generation older.
var Bases = map[string]string{
	"mistral-small-3.2": "AGENTRT_MISTRAL_NEMO_MODEL",
	"devstral-small":    "AGENTRT_MISTRAL_NEMO_MODEL",
}

// Base is the environment variable of the model folder whose vocabulary family's stand-in starts from: Bases',
// else AGENTRT_QWEN3_MODEL.
func Base(family string) string {
	if env, ok := Bases[family]; ok {
		return env
	}
	return "AGENTRT_QWEN3_MODEL"
}

// FamiliesDir is tito/testdata/families, the reference templates and tokenizer configs.
func FamiliesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "tito", "testdata", "families")
}

// Dir writes the stand-in model folder of family into a fresh t.TempDir() and returns it: tokenizer.json (the
// base's, Base(family), with the family's Tokens added as special tokens), the family's tokenizer_config.json and
// chat_template.jinja. It fails the test when the base's variable is unset, when the family has no Tokens, or
// when a listed token does not encode as one token of the folder's tokenizer.
func Dir(t testing.TB, family string) string {
	t.Helper()
	dir, m := build(t, family)
	m.Close()
	return dir
}

// Model is Dir, loaded; it is closed when the test ends.
func Model(t testing.TB, family string) *tito.Model {
	t.Helper()
	_, m := build(t, family)
	t.Cleanup(m.Close)
	return m
}

// tokenizers keeps each family's stand-in tokenizer.json for the test binary's life (an 11 MB JSON document
// rewritten from the base's: the tests of a package ask for the same families many times).
var tokenizers sync.Map // family -> []byte

func build(t testing.TB, family string) (string, *tito.Model) {
	t.Helper()
	list, ok := Tokens[family]
	if !ok {
		t.Fatalf("standin: no control tokens listed for family %q", family)
	}
	env := Base(family)
	base := os.Getenv(env)
	if base == "" {
		t.Fatalf("$%s is not set (the base of %s's stand-in vocabulary): run `make setup` and `source ~/.cache/agentrt/env.sh`", env, family)
	}
	tok, _ := tokenizers.Load(family)
	if tok == nil {
		data, err := os.ReadFile(filepath.Join(base, tito.FileTokenizer))
		if err != nil {
			t.Fatal(err)
		}
		b, err := addSpecialTokens(data, list)
		if err != nil {
			t.Fatalf("standin: %s: %v", filepath.Join(base, tito.FileTokenizer), err)
		}
		tok, _ = tokenizers.LoadOrStore(family, b)
	}
	dir := t.TempDir()
	files := map[string][]byte{tito.FileTokenizer: tok.([]byte)}
	for _, f := range []string{tito.FileTokenizerConfig, tito.FileChatTemplate} {
		var err error
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
	for _, s := range list {
		id, ok := m.Tokenizer.TokenID(s)
		if got := m.Tokenizer.Encode(s, false); !ok || !slices.Equal(got, []int32{id}) {
			m.Close()
			t.Fatalf("standin: %s: %q encodes as %v, want one token (id %d, present %v)", family, s, got, id, ok)
		}
	}
	return dir, m
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
			continue // already one token of the base vocabulary (Qwen3's <|im_end|>, <think>; Nemo's [INST])
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
