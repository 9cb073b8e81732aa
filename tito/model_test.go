package tito

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mdFolder builds a model folder in a temp dir from testdata/model/tiny/tokenizer.json (a small WordLevel
// tokenizer: <unk>=0 <s>=1 </s>=2 <eot>=3 hello=4 world=5 !=6) plus the given files (content mdOmit leaves a file out).
func mdFolder(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	tok, err := os.ReadFile(filepath.Join("testdata", "model", "tiny", FileTokenizer))
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{FileTokenizer: string(tok)}
	for k, v := range files {
		all[k] = v
	}
	for name, content := range all {
		if content == "\x00omit" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const mdOmit = "\x00omit"

func TestLoadModelTiny(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		check     func(t *testing.T, m *Model)
		wantErr   string // substring; the error must also wrap ErrModelFile
		wantInErr string // a second substring (usually the file name)
	}{
		{
			name:  "string tokens and template",
			files: map[string]string{FileTokenizerConfig: `{"bos_token": "<s>", "eos_token": "</s>", "chat_template": "{{ bos_token }}x"}`},
			check: func(t *testing.T, m *Model) {
				if m.BOSToken != "<s>" || m.EOSToken != "</s>" || m.TemplateSource != "{{ bos_token }}x" || m.TemplateFile != FileTokenizerConfig {
					t.Errorf("got %+v", m)
				}
				if !slices.Equal(m.StopIDs, []int32{2}) {
					t.Errorf("StopIDs = %v, want [2]", m.StopIDs)
				}
				sum := sha256.Sum256([]byte("{{ bos_token }}x"))
				if m.TemplateSHA256 != hex.EncodeToString(sum[:]) {
					t.Errorf("TemplateSHA256 = %s", m.TemplateSHA256)
				}
				if len(m.AddedTokens) != 4 || m.AddedTokens[3].Content != "<eot>" {
					t.Errorf("AddedTokens = %v (want tokenizer.json's when the config has none)", m.AddedTokens)
				}
			},
		},
		{
			name: "object tokens, added_tokens_decoder, generation_config list",
			files: map[string]string{
				FileTokenizerConfig:  `{"bos_token": {"__type": "AddedToken", "content": "<s>", "special": true}, "eos_token": {"content": "<eot>"}, "pad_token": null, "add_bos_token": true, "added_tokens_decoder": {"3": {"content": "<eot>", "special": true}, "1": {"content": "<s>", "special": true}}, "additional_special_tokens": ["<eot>", {"content": "</s>"}]}`,
				FileGenerationConfig: `{"eos_token_id": [2, 3, 2]}`,
			},
			check: func(t *testing.T, m *Model) {
				if m.BOSToken != "<s>" || m.EOSToken != "<eot>" || m.PadToken != "" {
					t.Errorf("got %+v", m)
				}
				if !slices.Equal(m.StopIDs, []int32{3, 2}) {
					t.Errorf("StopIDs = %v, want [3 2]", m.StopIDs)
				}
				if !m.IsStop(2) || m.IsStop(4) {
					t.Errorf("IsStop wrong")
				}
				if !slices.Equal(m.AdditionalSpecialTokens, []string{"<eot>", "</s>"}) {
					t.Errorf("AdditionalSpecialTokens = %v", m.AdditionalSpecialTokens)
				}
				if len(m.AddedTokens) != 2 || m.AddedTokens[0].ID != 1 || m.AddedTokens[1].ID != 3 || !m.AddedTokens[1].Special {
					t.Errorf("AddedTokens = %v", m.AddedTokens)
				}
				if m.TemplateSource != "" || m.TemplateSHA256 != "" || m.TemplateFile != "" {
					t.Errorf("no template expected, got %q", m.TemplateSource)
				}
			},
		},
		{
			name:  "generation_config int",
			files: map[string]string{FileTokenizerConfig: `{}`, FileGenerationConfig: `{"eos_token_id": 3, "temperature": 0.7}`},
			check: func(t *testing.T, m *Model) {
				if !slices.Equal(m.StopIDs, []int32{3}) {
					t.Errorf("StopIDs = %v", m.StopIDs)
				}
			},
		},
		{
			name:  "template list uses default",
			files: map[string]string{FileTokenizerConfig: `{"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]}`},
			check: func(t *testing.T, m *Model) {
				if m.TemplateSource != "D" || m.NamedTemplates["tool_use"] != "T" || len(m.NamedTemplates) != 2 {
					t.Errorf("TemplateSource = %q, NamedTemplates = %v", m.TemplateSource, m.NamedTemplates)
				}
			},
		},
		{
			name:  "chat_template.jinja takes precedence",
			files: map[string]string{FileTokenizerConfig: `{"chat_template": "from config"}`, FileChatTemplate: "from jinja\n"},
			check: func(t *testing.T, m *Model) {
				if m.TemplateSource != "from jinja\n" || m.TemplateFile != FileChatTemplate {
					t.Errorf("TemplateSource = %q from %q", m.TemplateSource, m.TemplateFile)
				}
			},
		},
		{
			name: "legacy special_tokens_map.json overrides the config",
			files: map[string]string{
				FileTokenizerConfig:  `{"bos_token": "<s>", "eos_token": "</s>", "additional_special_tokens": ["<s>"]}`,
				FileSpecialTokensMap: `{"eos_token": {"content": "<eot>", "lstrip": false}, "additional_special_tokens": ["<eot>"]}`,
			},
			check: func(t *testing.T, m *Model) {
				if m.BOSToken != "<s>" || m.EOSToken != "<eot>" || !slices.Equal(m.StopIDs, []int32{3}) || !slices.Equal(m.AdditionalSpecialTokens, []string{"<eot>"}) {
					t.Errorf("bos %q eos %q stop %v additional %v", m.BOSToken, m.EOSToken, m.StopIDs, m.AdditionalSpecialTokens)
				}
			},
		},
		{
			name: "special_tokens_map.json ignored with added_tokens_decoder",
			files: map[string]string{
				FileTokenizerConfig:  `{"eos_token": "</s>", "added_tokens_decoder": {"2": {"content": "</s>", "special": true}}}`,
				FileSpecialTokensMap: `{"eos_token": "<eot>"}`,
			},
			check: func(t *testing.T, m *Model) {
				if m.EOSToken != "</s>" {
					t.Errorf("eos %q, want the config's", m.EOSToken)
				}
			},
		},
		{
			name: "additional_chat_templates replace the config's",
			files: map[string]string{
				FileTokenizerConfig: `{"chat_template": [{"name": "default", "template": "config"}, {"name": "rag", "template": "R"}]}`,
				FileChatTemplate:    "D",
				filepath.Join(DirAdditionalChatTemplates, "tool_use.jinja"): "T",
			},
			check: func(t *testing.T, m *Model) {
				want := map[string]string{"default": "D", "tool_use": "T"}
				if m.TemplateSource != "D" || m.TemplateFile != FileChatTemplate || len(m.NamedTemplates) != 2 || m.NamedTemplates["tool_use"] != want["tool_use"] {
					t.Errorf("TemplateSource %q from %q, NamedTemplates %v", m.TemplateSource, m.TemplateFile, m.NamedTemplates)
				}
			},
		},
		{
			name: "default among additional_chat_templates",
			files: map[string]string{
				FileTokenizerConfig: `{}`,
				filepath.Join(DirAdditionalChatTemplates, "default.jinja"): "D2",
			},
			check: func(t *testing.T, m *Model) {
				if m.TemplateSource != "D2" || m.TemplateFile != filepath.Join(DirAdditionalChatTemplates, "default.jinja") || m.NamedTemplates != nil {
					t.Errorf("TemplateSource %q from %q, NamedTemplates %v", m.TemplateSource, m.TemplateFile, m.NamedTemplates)
				}
			},
		},
		{
			name:    "additional_chat_templates without a default",
			files:   map[string]string{FileTokenizerConfig: `{"chat_template": "C"}`, filepath.Join(DirAdditionalChatTemplates, "tool_use.jinja"): "T"},
			wantErr: DirAdditionalChatTemplates, wantInErr: `templates [tool_use] but none named "default"`,
		},
		{
			name:    "corrupt special_tokens_map.json",
			files:   map[string]string{FileTokenizerConfig: `{}`, FileSpecialTokensMap: `[`},
			wantErr: FileSpecialTokensMap, wantInErr: "invalid JSON",
		},
		{
			name:    "bad token in special_tokens_map.json",
			files:   map[string]string{FileTokenizerConfig: `{}`, FileSpecialTokensMap: `{"eos_token": ["<eot>"]}`},
			wantErr: FileSpecialTokensMap, wantInErr: "eos_token: want a string or an object",
		},
		{
			name:    "special_tokens_map.json eos not in vocabulary",
			files:   map[string]string{FileTokenizerConfig: `{}`, FileSpecialTokensMap: `{"eos_token": "<nope>"}`},
			wantErr: FileSpecialTokensMap, wantInErr: `eos_token: token "<nope>" is not in the vocabulary`,
		},
		{
			name:    "missing tokenizer.json",
			files:   map[string]string{FileTokenizer: mdOmit, FileTokenizerConfig: `{}`},
			wantErr: FileTokenizer, wantInErr: "no such file",
		},
		{
			name:    "corrupt tokenizer.json",
			files:   map[string]string{FileTokenizer: `{"model": `, FileTokenizerConfig: `{}`},
			wantErr: FileTokenizer, wantInErr: "not a valid tokenizer.json",
		},
		{
			name:    "missing tokenizer_config.json",
			files:   map[string]string{},
			wantErr: FileTokenizerConfig, wantInErr: "no such file",
		},
		{
			name:    "corrupt tokenizer_config.json",
			files:   map[string]string{FileTokenizerConfig: `{"eos_token": `},
			wantErr: FileTokenizerConfig, wantInErr: "invalid JSON",
		},
		{
			name:    "eos not in vocabulary",
			files:   map[string]string{FileTokenizerConfig: `{"eos_token": "<|im_end|>"}`},
			wantErr: FileTokenizerConfig, wantInErr: `eos_token: token "<|im_end|>" is not in the vocabulary`,
		},
		{
			name:    "bad token object",
			files:   map[string]string{FileTokenizerConfig: `{"bos_token": {"text": "<s>"}}`},
			wantErr: FileTokenizerConfig, wantInErr: `bos_token: want a string or an object with "content"`,
		},
		{
			name:    "bad token type",
			files:   map[string]string{FileTokenizerConfig: `{"bos_token": 7}`},
			wantErr: FileTokenizerConfig, wantInErr: "bos_token",
		},
		{
			name:    "added token disagrees",
			files:   map[string]string{FileTokenizerConfig: `{"added_tokens_decoder": {"5": {"content": "<eot>", "special": true}}}`},
			wantErr: FileTokenizerConfig, wantInErr: `added_tokens_decoder[5] "<eot>" disagrees`,
		},
		{
			name:    "added token key not an id",
			files:   map[string]string{FileTokenizerConfig: `{"added_tokens_decoder": {"x": {"content": "<eot>"}}}`},
			wantErr: FileTokenizerConfig, wantInErr: `key "x" is not a token id`,
		},
		{
			name:    "template list without default",
			files:   map[string]string{FileTokenizerConfig: `{"chat_template": [{"name": "tool_use", "template": "T"}]}`},
			wantErr: FileTokenizerConfig, wantInErr: `without one named "default" (have [tool_use])`,
		},
		{
			name:    "template of the wrong type",
			files:   map[string]string{FileTokenizerConfig: `{"chat_template": 42}`},
			wantErr: FileTokenizerConfig, wantInErr: "chat_template: want a string or a list",
		},
		{
			name:    "template list entry without template",
			files:   map[string]string{FileTokenizerConfig: `{"chat_template": [{"name": "default"}]}`},
			wantErr: FileTokenizerConfig, wantInErr: "chat_template: entry 0",
		},
		{
			name:    "corrupt generation_config.json",
			files:   map[string]string{FileTokenizerConfig: `{}`, FileGenerationConfig: `{`},
			wantErr: FileGenerationConfig, wantInErr: "invalid JSON",
		},
		{
			name:    "eos_token_id of the wrong type",
			files:   map[string]string{FileTokenizerConfig: `{}`, FileGenerationConfig: `{"eos_token_id": "2"}`},
			wantErr: FileGenerationConfig, wantInErr: "eos_token_id: want an int or a list of ints",
		},
		{
			name:    "eos_token_id outside the vocabulary",
			files:   map[string]string{FileTokenizerConfig: `{}`, FileGenerationConfig: `{"eos_token_id": [2, 999]}`},
			wantErr: FileGenerationConfig, wantInErr: "eos_token_id 999 is outside the vocabulary (size 7)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := mdFolder(t, tt.files)
			m, err := LoadModel(dir)
			if tt.wantErr != "" {
				if err == nil {
					m.Close()
					t.Fatalf("LoadModel succeeded, want an error naming %s", tt.wantErr)
				}
				if !errors.Is(err, ErrModelFile) {
					t.Errorf("err %v does not wrap ErrModelFile", err)
				}
				if !strings.Contains(err.Error(), filepath.Join(dir, tt.wantErr)) || !strings.Contains(err.Error(), tt.wantInErr) {
					t.Errorf("err = %v\nwant it to name %s and contain %q", err, filepath.Join(dir, tt.wantErr), tt.wantInErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.Dir != dir || m.Tokenizer == nil {
				t.Errorf("Dir = %q, Tokenizer = %v", m.Dir, m.Tokenizer)
			}
			tt.check(t, m)
		})
	}
}

func TestLoadModelNotAFolder(t *testing.T) {
	if _, err := LoadModel(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, ErrModelFile) || !strings.Contains(err.Error(), "model folder") {
		t.Errorf("missing folder: err = %v", err)
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := LoadModel(f); !errors.Is(err, ErrModelFile) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file: err = %v", err)
	}
}

func TestLoadModelReal(t *testing.T) {
	tests := []struct {
		name         string
		templateFile string
		bos, eos     string
		stop         []int32
		wantInTmpl   string
	}{
		{"qwen3", FileTokenizerConfig, "", "<|im_end|>", []int32{151645}, "enable_thinking"},
		{"qwen2.5", FileChatTemplate, "", "<|im_end|>", []int32{151645}, "You are Qwen, created by Alibaba Cloud"},
		{"llama3.1", FileChatTemplate, "<|begin_of_text|>", "<|eot_id|>", []int32{128009}, "<|start_header_id|>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tkModel(t, tt.name)
			if m.TemplateFile != tt.templateFile || !strings.Contains(m.TemplateSource, tt.wantInTmpl) {
				t.Errorf("template from %q, want %q containing %q", m.TemplateFile, tt.templateFile, tt.wantInTmpl)
			}
			if m.BOSToken != tt.bos || m.EOSToken != tt.eos || !slices.Equal(m.StopIDs, tt.stop) {
				t.Errorf("bos %q eos %q stop %v; want %q %q %v", m.BOSToken, m.EOSToken, m.StopIDs, tt.bos, tt.eos, tt.stop)
			}
			data, err := os.ReadFile(filepath.Join(m.Dir, FileTokenizer))
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(data); m.TokenizerSHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("TokenizerSHA256 = %s", m.TokenizerSHA256)
			}
			if sum := sha256.Sum256([]byte(m.TemplateSource)); m.TemplateSHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("TemplateSHA256 = %s", m.TemplateSHA256)
			}
			for _, a := range m.AddedTokens {
				if id, ok := m.Tokenizer.TokenID(a.Content); !ok || id != a.ID {
					t.Errorf("added token %q: TokenID = %d, %v; want %d", a.Content, id, ok, a.ID)
				}
			}
		})
	}
}

// TestLoadModelMatchesTransformers compares LoadModel with what transformers.AutoTokenizer makes of the same
// folders (testdata/tokenizer/model_folders.json, from scripts/golden/tokenizer_golden.py).
func TestLoadModelMatchesTransformers(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "tokenizer", "model_folders.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Folders map[string]struct {
			BOSToken                string   `json:"bos_token"`
			EOSToken                string   `json:"eos_token"`
			PadToken                string   `json:"pad_token"`
			UnkToken                string   `json:"unk_token"`
			EOSTokenID              int32    `json:"eos_token_id"`
			AdditionalSpecialTokens []string `json:"additional_special_tokens"`
			Len                     int      `json:"len"`
			ChatTemplateSHA256      string   `json:"chat_template_sha256"`
			TokenizerSHA256         string   `json:"tokenizer_sha256"`
		} `json:"folders"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	for name, want := range g.Folders {
		t.Run(name, func(t *testing.T) {
			m := tkModel(t, name)
			if m.TokenizerSHA256 != want.TokenizerSHA256 {
				t.Fatalf("tokenizer.json differs from the golden one: rerun make setup or the golden script")
			}
			got := [4]string{m.BOSToken, m.EOSToken, m.PadToken, m.UnkToken}
			if got != [4]string{want.BOSToken, want.EOSToken, want.PadToken, want.UnkToken} {
				t.Errorf("bos/eos/pad/unk = %q, want %q %q %q %q", got, want.BOSToken, want.EOSToken, want.PadToken, want.UnkToken)
			}
			if len(m.StopIDs) == 0 || m.StopIDs[0] != want.EOSTokenID {
				t.Errorf("StopIDs = %v, want eos_token_id %d first", m.StopIDs, want.EOSTokenID)
			}
			if !slices.Equal(m.AdditionalSpecialTokens, want.AdditionalSpecialTokens) && !(len(m.AdditionalSpecialTokens) == 0 && len(want.AdditionalSpecialTokens) == 0) {
				t.Errorf("AdditionalSpecialTokens = %v, want %v", m.AdditionalSpecialTokens, want.AdditionalSpecialTokens)
			}
			if m.Tokenizer.VocabSize() != want.Len {
				t.Errorf("VocabSize = %d, want len(tokenizer) %d", m.Tokenizer.VocabSize(), want.Len)
			}
			if m.TemplateSHA256 != want.ChatTemplateSHA256 {
				t.Errorf("TemplateSHA256 = %s, want transformers' chat_template %s", m.TemplateSHA256, want.ChatTemplateSHA256)
			}
		})
	}
}

func TestIsModelFile(t *testing.T) {
	for rel, want := range map[string]bool{
		"tokenizer.json": true, "tokenizer_config.json": true, "chat_template.jinja": true, "generation_config.json": true,
		"special_tokens_map.json": true, "additional_chat_templates/tool_use.jinja": true,
		"config.json": false, "model.safetensors": false, "vocab.json": false, "additional_chat_templates/x.txt": false,
		"sub/tokenizer.json": false, "additional_chat_templates/deeper/x.jinja": false,
	} {
		if got := IsModelFile(rel); got != want {
			t.Errorf("IsModelFile(%q) = %v, want %v", rel, got, want)
		}
	}
}
