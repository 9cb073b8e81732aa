package tito

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The files of a Hugging Face model folder that LoadModel reads.
const (
	FileTokenizer        = "tokenizer.json"
	FileTokenizerConfig  = "tokenizer_config.json"
	FileChatTemplate     = "chat_template.jinja"
	FileGenerationConfig = "generation_config.json"
	FileSpecialTokensMap = "special_tokens_map.json"
	// DirAdditionalChatTemplates holds named templates (<name>.jinja) besides the default one.
	DirAdditionalChatTemplates = "additional_chat_templates"
)

// IsModelFile reports whether LoadModel reads the file at rel, a "/"-separated path inside a model folder: the
// files to fetch of a model on a hub (its tokenizer and chat templates, not its weights).
func IsModelFile(rel string) bool {
	switch rel {
	case FileTokenizer, FileTokenizerConfig, FileChatTemplate, FileGenerationConfig, FileSpecialTokensMap:
		return true
	}
	dir, name := path.Split(rel)
	return dir == DirAdditionalChatTemplates+"/" && strings.HasSuffix(name, ".jinja")
}

// Model is what agentrt needs of a Hugging Face model folder: the tokenizer, the chat template source, the
// special tokens and the ids that end a generation. It is read-only after LoadModel and safe for concurrent use.
type Model struct {
	// Dir is the folder the model was loaded from, as given.
	Dir string
	// Tokenizer is the folder's tokenizer.json.
	Tokenizer *Tokenizer

	// TemplateSource is the default chat template (Jinja source): chat_template.jinja if present (it takes
	// precedence, as in transformers), else tokenizer_config.json's chat_template (a string, or the entry named
	// "default" of a [{name, template}] list). Empty if the folder has none.
	TemplateSource string
	// TemplateFile is the file TemplateSource came from, relative to Dir (FileChatTemplate,
	// additional_chat_templates/default.jinja or FileTokenizerConfig), or "".
	TemplateFile string
	// NamedTemplates holds every template by name ("default", "tool_use", ...) when there are several: a
	// [{name, template}] list in tokenizer_config.json, or chat_template.jinja plus
	// additional_chat_templates/<name>.jinja files (which, as in transformers, replace the config's). Nil when
	// there is a single template.
	NamedTemplates map[string]string

	// BOSToken, EOSToken, PadToken and UnkToken are the special tokens of tokenizer_config.json ("" if unset),
	// as the chat template sees them (bos_token, eos_token, ...).
	BOSToken, EOSToken, PadToken, UnkToken string
	// AdditionalSpecialTokens is tokenizer_config.json's additional_special_tokens.
	AdditionalSpecialTokens []string
	// AddedTokens is tokenizer_config.json's added_tokens_decoder (falling back to tokenizer.json's
	// added_tokens), in id order.
	AddedTokens []AddedToken

	// StopIDs are the ids that end a turn: the EOS token, then generation_config.json's eos_token_id (an int or
	// a list), without duplicates, in that order.
	StopIDs []int32

	// TokenizerSHA256 and TemplateSHA256 are hex sha256 sums of tokenizer.json and of TemplateSource (""
	// without a template), for trajectory provenance.
	TokenizerSHA256, TemplateSHA256 string
}

// tokenizerConfig is the part of tokenizer_config.json that LoadModel reads.
type tokenizerConfig struct {
	BOSToken                json.RawMessage            `json:"bos_token"`
	EOSToken                json.RawMessage            `json:"eos_token"`
	PadToken                json.RawMessage            `json:"pad_token"`
	UnkToken                json.RawMessage            `json:"unk_token"`
	AdditionalSpecialTokens []json.RawMessage          `json:"additional_special_tokens"`
	AddedTokensDecoder      map[string]json.RawMessage `json:"added_tokens_decoder"`
	ChatTemplate            json.RawMessage            `json:"chat_template"`
}

// LoadModel reads a Hugging Face model folder: tokenizer.json (required), tokenizer_config.json (required),
// and the optional chat_template.jinja, additional_chat_templates/*.jinja, generation_config.json and (for
// legacy folders whose config has no added_tokens_decoder) special_tokens_map.json, with transformers'
// precedence.
//
// # Errors
//
// Every error wraps ErrModelFile and names the file: a missing or unreadable required file, invalid JSON, a
// special token or added token that disagrees with tokenizer.json, an EOS token that is not in the vocabulary,
// a malformed chat_template or eos_token_id.
func LoadModel(dir string) (*Model, error) {
	if err := checkModelFolder(dir); err != nil {
		return nil, err
	}
	m := &Model{Dir: dir}
	tokPath := filepath.Join(dir, FileTokenizer)
	tok, err := LoadTokenizer(tokPath)
	if err != nil {
		return nil, err
	}
	m.Tokenizer = tok
	m.TokenizerSHA256 = tok.SHA256()
	if err := m.loadConfig(); err != nil {
		tok.Close()
		return nil, err
	}
	return m, nil
}

// checkModelFolder returns an error (wrapping ErrModelFile) when dir is missing or not a directory.
func checkModelFolder(dir string) error {
	if st, err := os.Stat(dir); err != nil {
		return fmt.Errorf("%w: model folder %s: %w", ErrModelFile, dir, err)
	} else if !st.IsDir() {
		return fmt.Errorf("%w: model folder %s: not a directory", ErrModelFile, dir)
	}
	return nil
}

// readTokenizerConfig reads the folder's tokenizer_config.json and takes its special tokens (bos, eos, pad, unk and
// the additional ones) into m.
func (m *Model) readTokenizerConfig() (cfg tokenizerConfig, cfgPath string, err error) {
	cfgPath = filepath.Join(m.Dir, FileTokenizerConfig)
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		return cfg, cfgPath, fmt.Errorf("%w: %s: %w", ErrModelFile, cfgPath, err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return cfg, cfgPath, fmt.Errorf("%w: %s: invalid JSON: %w", ErrModelFile, cfgPath, err)
	}
	for _, f := range []struct {
		key string
		raw json.RawMessage
		dst *string
	}{{"bos_token", cfg.BOSToken, &m.BOSToken}, {"eos_token", cfg.EOSToken, &m.EOSToken},
		{"pad_token", cfg.PadToken, &m.PadToken}, {"unk_token", cfg.UnkToken, &m.UnkToken}} {
		if *f.dst, err = tokenString(f.raw); err != nil {
			return cfg, cfgPath, fmt.Errorf("%w: %s: %s: %w", ErrModelFile, cfgPath, f.key, err)
		}
	}
	for i, raw := range cfg.AdditionalSpecialTokens {
		s, err := tokenString(raw)
		if err != nil {
			return cfg, cfgPath, fmt.Errorf("%w: %s: additional_special_tokens[%d]: %w", ErrModelFile, cfgPath, i, err)
		}
		m.AdditionalSpecialTokens = append(m.AdditionalSpecialTokens, s)
	}
	return cfg, cfgPath, nil
}

func (m *Model) loadConfig() error {
	cfg, cfgPath, err := m.readTokenizerConfig()
	if err != nil {
		return err
	}
	from := map[string]string{} // special token key -> the file it came from, when not tokenizer_config.json
	if len(cfg.AddedTokensDecoder) == 0 {
		// Legacy folders: transformers reads special_tokens_map.json, whose entries override the config's.
		if err := m.loadSpecialTokensMap(from); err != nil {
			return err
		}
	}
	if err := m.loadAddedTokens(cfg.AddedTokensDecoder, cfgPath); err != nil {
		return err
	}
	for _, f := range []struct{ key, tok string }{{"bos_token", m.BOSToken}, {"eos_token", m.EOSToken},
		{"pad_token", m.PadToken}, {"unk_token", m.UnkToken}} {
		if f.tok == "" {
			continue
		}
		if _, ok := m.Tokenizer.TokenID(f.tok); !ok {
			err := fmt.Errorf("token %q is not in the vocabulary of %s", f.tok, FileTokenizer)
			if p, ok := from[f.key]; ok {
				return fmt.Errorf("%w: %s: %s: %w", ErrModelFile, p, f.key, err)
			}
			return fmt.Errorf("%w: %s: %s: %w", ErrModelFile, cfgPath, f.key, err)
		}
	}

	if err := m.loadTemplate(cfg.ChatTemplate, cfgPath); err != nil {
		return err
	}
	if m.TemplateSource != "" {
		sum := sha256.Sum256([]byte(m.TemplateSource))
		m.TemplateSHA256 = hex.EncodeToString(sum[:])
	}

	if m.EOSToken != "" {
		id, _ := m.Tokenizer.TokenID(m.EOSToken)
		m.StopIDs = append(m.StopIDs, id)
	}
	return m.loadGenerationConfig()
}

func (m *Model) loadSpecialTokensMap(from map[string]string) error {
	path := filepath.Join(m.Dir, FileSpecialTokensMap)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrModelFile, path, err)
	}
	var stm map[string]json.RawMessage
	if err := json.Unmarshal(data, &stm); err != nil {
		return fmt.Errorf("%w: %s: invalid JSON: %w", ErrModelFile, path, err)
	}
	for key, dst := range map[string]*string{"bos_token": &m.BOSToken, "eos_token": &m.EOSToken, "pad_token": &m.PadToken, "unk_token": &m.UnkToken} {
		raw, ok := stm[key]
		if !ok {
			continue
		}
		if *dst, err = tokenString(raw); err != nil {
			return fmt.Errorf("%w: %s: %s: %w", ErrModelFile, path, key, err)
		}
		from[key] = path
	}
	if raw, ok := stm["additional_special_tokens"]; ok {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("%w: %s: additional_special_tokens: %w", ErrModelFile, path, err)
		}
		m.AdditionalSpecialTokens = m.AdditionalSpecialTokens[:0]
		for i, r := range list {
			s, err := tokenString(r)
			if err != nil {
				return fmt.Errorf("%w: %s: additional_special_tokens[%d]: %w", ErrModelFile, path, i, err)
			}
			m.AdditionalSpecialTokens = append(m.AdditionalSpecialTokens, s)
		}
	}
	return nil
}

// tokenString reads a special token of tokenizer_config.json: null, a string, or an AddedToken object
// {"content": ..., ...}.
func tokenString(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("want a string or an object with \"content\": %w", err)
	}
	if obj.Content == nil {
		return "", errors.New(`want a string or an object with "content"`)
	}
	return *obj.Content, nil
}

func (m *Model) loadAddedTokens(dec map[string]json.RawMessage, cfgPath string) error {
	if len(dec) == 0 {
		m.AddedTokens = m.Tokenizer.AddedTokens()
		slices.SortFunc(m.AddedTokens, func(a, b AddedToken) int { return int(a.ID - b.ID) })
		return nil
	}
	for key, raw := range dec {
		id, err := strconv.ParseInt(key, 10, 32)
		if err != nil {
			return fmt.Errorf("%w: %s: added_tokens_decoder: key %q is not a token id", ErrModelFile, cfgPath, key)
		}
		var a struct {
			Content *string `json:"content"`
			Special bool    `json:"special"`
		}
		if err := json.Unmarshal(raw, &a); err != nil || a.Content == nil {
			return fmt.Errorf("%w: %s: added_tokens_decoder[%s]: want an object with \"content\"", ErrModelFile, cfgPath, key)
		}
		if got, ok := m.Tokenizer.TokenID(*a.Content); !ok || got != int32(id) {
			return fmt.Errorf("%w: %s: added_tokens_decoder[%s] %q disagrees with %s (which has it as id %d, present %v)",
				ErrModelFile, cfgPath, key, *a.Content, FileTokenizer, got, ok)
		}
		m.AddedTokens = append(m.AddedTokens, AddedToken{ID: int32(id), Content: *a.Content, Special: a.Special})
	}
	slices.SortFunc(m.AddedTokens, func(a, b AddedToken) int { return int(a.ID - b.ID) })
	return nil
}

func (m *Model) loadTemplate(raw json.RawMessage, cfgPath string) error {
	// As transformers: template files (chat_template.jinja, additional_chat_templates/*.jinja) replace
	// whatever tokenizer_config.json says.
	files := map[string]string{}
	paths := map[string]string{}
	jinjaPath := filepath.Join(m.Dir, FileChatTemplate)
	data, err := os.ReadFile(jinjaPath)
	switch {
	case err == nil:
		files["default"], paths["default"] = string(data), FileChatTemplate
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s: %w", ErrModelFile, jinjaPath, err)
	}
	extra, _ := filepath.Glob(filepath.Join(m.Dir, DirAdditionalChatTemplates, "*.jinja"))
	for _, p := range extra {
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrModelFile, p, err)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".jinja")
		files[name], paths[name] = string(data), filepath.Join(DirAdditionalChatTemplates, filepath.Base(p))
	}
	if len(files) > 0 {
		if len(files) > 1 {
			m.NamedTemplates = files
		}
		src, ok := files["default"]
		if !ok {
			return fmt.Errorf("%w: %s: templates %v but none named \"default\" (add %s)", ErrModelFile,
				filepath.Join(m.Dir, DirAdditionalChatTemplates), slices.Sorted(maps.Keys(files)), FileChatTemplate)
		}
		m.TemplateSource, m.TemplateFile = src, paths["default"]
		return nil
	}

	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: chat_template: %s", ErrModelFile, cfgPath, fmt.Sprintf(format, args...))
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &m.TemplateSource); err != nil {
			return bad("%v", err)
		}
		m.TemplateFile = FileTokenizerConfig
		return nil
	}
	var list []struct {
		Name     *string `json:"name"`
		Template *string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return bad("want a string or a list of {name, template}: %v", err)
	}
	named := make(map[string]string, len(list))
	for i, e := range list {
		if e.Name == nil || e.Template == nil {
			return bad("entry %d: want {\"name\": ..., \"template\": ...}", i)
		}
		named[*e.Name] = *e.Template
	}
	src, ok := named["default"]
	if !ok {
		return bad("a list of templates without one named \"default\" (have %v)", slices.Sorted(maps.Keys(named)))
	}
	m.NamedTemplates, m.TemplateSource, m.TemplateFile = named, src, FileTokenizerConfig
	return nil
}

func (m *Model) loadGenerationConfig() error {
	path := filepath.Join(m.Dir, FileGenerationConfig)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrModelFile, path, err)
	}
	var gc struct {
		EOSTokenID json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(data, &gc); err != nil {
		return fmt.Errorf("%w: %s: invalid JSON: %w", ErrModelFile, path, err)
	}
	raw := bytes.TrimSpace(gc.EOSTokenID)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var ids []int32
	if raw[0] == '[' {
		err = json.Unmarshal(raw, &ids)
	} else {
		var id int32
		err = json.Unmarshal(raw, &id)
		ids = []int32{id}
	}
	if err != nil {
		return fmt.Errorf("%w: %s: eos_token_id: want an int or a list of ints: %w", ErrModelFile, path, err)
	}
	for _, id := range ids {
		if id < 0 || int(id) >= m.Tokenizer.VocabSize() {
			return fmt.Errorf("%w: %s: eos_token_id %d is outside the vocabulary (size %d)", ErrModelFile, path, id, m.Tokenizer.VocabSize())
		}
		if !slices.Contains(m.StopIDs, id) {
			m.StopIDs = append(m.StopIDs, id)
		}
	}
	return nil
}

// IsStop reports whether id is one of StopIDs.
func (m *Model) IsStop(id int32) bool { return slices.Contains(m.StopIDs, id) }

// Close frees the tokenizer. The Model must not be used afterwards.
func (m *Model) Close() { m.Tokenizer.Close() }

// WithChatTemplate returns a copy of m that renders with src (named file in errors and provenance) instead of the
// folder's template: what a server launched with --chat-template FILE renders. The copy shares m's tokenizer:
// close m, not the copy.
func (m *Model) WithChatTemplate(src, file string) *Model {
	c := *m
	c.TemplateSource, c.TemplateFile, c.NamedTemplates = src, file, nil
	sum := sha256.Sum256([]byte(src))
	c.TemplateSHA256 = hex.EncodeToString(sum[:])
	return &c
}
