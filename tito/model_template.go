package tito

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	if err := checkModelFolder(dir); err != nil {
		return nil, err
	}
	m := &Model{Dir: dir}
	cfg, cfgPath, err := m.readTokenizerConfig()
	if err != nil {
		return nil, err
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
