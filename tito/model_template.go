package tito

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// LoadModelTemplate reads what a model folder says about its chat template without loading a tokenizer:
// tokenizer_config.json (required) and the template files, with LoadModel's precedence. It is for looking at a
// family's template (`agentrt model check` on a folder that has no tokenizer.json, family detection tests).
//
// The Model it returns has a nil Tokenizer, no StopIDs and no TokenizerSHA256; special and added tokens are taken
// as tokenizer_config.json writes them, unchecked against a vocabulary. Do not call Close on it.
//
// # Errors
//
// As LoadModel's for tokenizer_config.json and the template files; every error wraps ErrModelFile.
func LoadModelTemplate(dir string) (*Model, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("%w: model folder %s: %w", ErrModelFile, dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%w: model folder %s: not a directory", ErrModelFile, dir)
	}
	m := &Model{Dir: dir}
	cfgPath := filepath.Join(dir, FileTokenizerConfig)
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrModelFile, cfgPath, err)
	}
	var cfg tokenizerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("%w: %s: invalid JSON: %w", ErrModelFile, cfgPath, err)
	}
	for _, f := range []struct {
		key string
		raw json.RawMessage
		dst *string
	}{{"bos_token", cfg.BOSToken, &m.BOSToken}, {"eos_token", cfg.EOSToken, &m.EOSToken},
		{"pad_token", cfg.PadToken, &m.PadToken}, {"unk_token", cfg.UnkToken, &m.UnkToken}} {
		if *f.dst, err = tokenString(f.raw); err != nil {
			return nil, fmt.Errorf("%w: %s: %s: %w", ErrModelFile, cfgPath, f.key, err)
		}
	}
	for i, raw := range cfg.AdditionalSpecialTokens {
		s, err := tokenString(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: additional_special_tokens[%d]: %w", ErrModelFile, cfgPath, i, err)
		}
		m.AdditionalSpecialTokens = append(m.AdditionalSpecialTokens, s)
	}
	for key, raw := range cfg.AddedTokensDecoder {
		id, err := strconv.ParseInt(key, 10, 32)
		var a struct {
			Content *string `json:"content"`
			Special bool    `json:"special"`
		}
		if err != nil || json.Unmarshal(raw, &a) != nil || a.Content == nil {
			return nil, fmt.Errorf("%w: %s: added_tokens_decoder[%s]: want a token id and an object with \"content\"", ErrModelFile, cfgPath, key)
		}
		m.AddedTokens = append(m.AddedTokens, AddedToken{ID: int32(id), Content: *a.Content, Special: a.Special})
	}
	slices.SortFunc(m.AddedTokens, func(a, b AddedToken) int { return int(a.ID - b.ID) })
	if err := m.loadTemplate(cfg.ChatTemplate, cfgPath); err != nil {
		return nil, err
	}
	if m.TemplateSource != "" {
		sum := sha256.Sum256([]byte(m.TemplateSource))
		m.TemplateSHA256 = hex.EncodeToString(sum[:])
	}
	return m, nil
}
