package parsers

import "strings"

// plainMarkers are, for the formats whose every call (well-formed or not) starts with one fixed marker, that
// marker: a text without it holds no call and no error, whatever the tools.
var plainMarkers = map[string]string{
	"hermes":      toolCallOpen,
	"qwen25":      toolCallOpen,
	"qwen3_coder": qwenTags.open,
	"minimax-m2":  minimaxTags.open,
	"seed_oss":    seedTags.open,
}

// Plain reports whether the parser of format name finds nothing in text, without parsing: ok when the format has a
// fixed call marker (hermes, qwen25, qwen3_coder, minimax-m2, seed_oss) and text does not contain it. normal is then exactly the Result's NormalText
// (text trimmed of surrounding whitespace), and Calls and Errors are empty. For any other text or format ok is
// false and the parser is the authority. A caller that runs the parser out of process (the Wasm plugin) skips the
// call with it.
func Plain(name, text string) (normal string, ok bool) {
	m, known := plainMarkers[name]
	if !known || strings.Contains(text, m) {
		return "", false
	}
	return strings.TrimSpace(text), true
}
