package turn

import (
	"encoding/json"
	"fmt"
)

// ToolSpec writes a tool in the OpenAI function format that chat templates read, with OpenAI's key order
// ({"type": "function", "function": {"name", "description", "parameters"}}): templates write specs as the JSON
// they are given (tojson keeps the order), so the same tool renders the same prompt whichever API or plugin
// declared it. An empty description or parameters is left out.
//
// # Errors
//
// Parameters that are not valid JSON.
func ToolSpec(name, description string, parameters json.RawMessage) (json.RawMessage, error) {
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	b, err := json.Marshal(struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}{"function", fn{name, description, parameters}})
	if err != nil {
		return nil, fmt.Errorf("tool %q: parameters: %w", name, err)
	}
	return b, nil
}

// ToolName reads the function name of an OpenAI-style tool spec ({"type":"function","function":{"name":...}}) or
// a bare {"name":...}.
//
// # Errors
//
// A spec that is not a JSON object, or one without a name.
func ToolName(spec json.RawMessage) (string, error) {
	var s struct {
		Name     string `json:"name"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(spec, &s); err != nil {
		return "", fmt.Errorf("tool spec is not a JSON object: %w", err)
	}
	if s.Function != nil && s.Function.Name != "" {
		return s.Function.Name, nil
	}
	if s.Name != "" {
		return s.Name, nil
	}
	return "", fmt.Errorf("tool spec without a name: %s", spec)
}
