package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A command tool's parameters: a TOML table (inline or as nested [tables]) or a string holding a JSON object give
// the same schema; any other string is a clear error naming the file, line and key.
func TestCommandParameters(t *testing.T) {
	const head = good + `
[[agent.tools]]
plugin = "x.wasm"
[agent.tools.command]
name = "jq"
args = ["jq", "{filter}"]
`
	const want = `{"properties":{"filter":{"type":"string"}},"type":"object"}`
	for name, src := range map[string]string{
		"nested tables": head + "[agent.tools.command.parameters]\ntype = \"object\"\n[agent.tools.command.parameters.properties.filter]\ntype = \"string\"\n",
		"inline table":  head + "parameters = { type = \"object\", properties = { filter = { type = \"string\" } } }\n",
		"JSON string":   head + `parameters = '{"properties":{"filter":{"type":"string"}},"type":"object"}'` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := Parse("runtime.toml", src)
			if err != nil {
				t.Fatal(err)
			}
			b, err := cfg.Agents[0].Tools[1].Command.ParametersJSON()
			var got, exp any
			_ = json.Unmarshal(b, &got)
			_ = json.Unmarshal([]byte(want), &exp)
			gb, _ := json.Marshal(got)
			eb, _ := json.Marshal(exp)
			if err != nil || string(gb) != string(eb) {
				t.Fatalf("parameters = %s, %v; want %s", b, err, want)
			}
		})
	}
	for name, bad := range map[string]string{"not JSON": `parameters = "type: object"`, "JSON array": `parameters = '[1]'`, "number": `parameters = 3`} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("runtime.toml", head+bad+"\n")
			var ce *Error
			if !errors.As(err, &ce) || ce.Key != "agent.tools.command.parameters" || ce.Line != strings.Count(head, "\n")+1 {
				t.Fatalf("got %v; want an error at runtime.toml:%d naming agent.tools.command.parameters", err, strings.Count(head, "\n")+1)
			}
		})
	}
	// A typo next to the parameters is still caught.
	if _, err := Parse("runtime.toml", head+"paramters = {}\n"); err == nil || !strings.Contains(err.Error(), "unknown key") {
		t.Errorf("typo: %v", err)
	}
}
