package tito_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/agentrt/agentrt/tito"
)

// goldenCase is the part of a golden template case (testdata/template/*.json, written by
// scripts/golden/template_golden.py) that the fuzz target reuses: which template, and real inputs as seeds.
type goldenCase struct {
	Template      string             `json:"template"`
	SpecialTokens tito.SpecialTokens `json:"special_tokens"`
	Messages      json.RawMessage    `json:"messages"`
	History       json.RawMessage    `json:"history"`
	New           json.RawMessage    `json:"new"`
	Tools         json.RawMessage    `json:"tools"`
	Kwargs        json.RawMessage    `json:"kwargs"`
}

// fuzzTemplates loads every template the golden corpus names, with its special tokens, and returns the golden
// cases as seeds. Going through the public API only (NewChatTemplate, Render, RenderDelta) keeps the target
// valid whichever engine renders.
func fuzzTemplates(f *testing.F) (map[string]*tito.ChatTemplate, []goldenCase) {
	files, err := filepath.Glob(filepath.Join("testdata", "template", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no golden template cases in testdata/template: %v", err)
	}
	sort.Strings(files)
	tpls := map[string]*tito.ChatTemplate{}
	var cases []goldenCase
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var c goldenCase
		if err := json.Unmarshal(b, &c); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		if c.Template == "" {
			continue
		}
		cases = append(cases, c)
		if tpls[c.Template] != nil {
			continue
		}
		src, err := os.ReadFile(filepath.Join("testdata", "template", c.Template))
		if err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		if tpls[c.Template], err = tito.NewChatTemplate(string(src), c.SpecialTokens); err != nil {
			f.Fatalf("%s: %v", c.Template, err)
		}
	}
	return tpls, cases
}

// FuzzRenderInputs feeds arbitrary messages, tools and kwargs (as the JSON a trainer or config sends) to every
// golden family's template. Properties: nothing panics; input that does not decode is refused by DecodeMessages
// or json; a render is a pure function of its input (two renders agree, byte for byte, error for error); and
// RenderDelta of the same messages never panics either.
//
//	go test -run '^$' -fuzz FuzzRenderInputs -fuzztime 30s ./tito/
func FuzzRenderInputs(f *testing.F) {
	tpls, cases := fuzzTemplates(f)
	for _, c := range cases {
		msgs := c.Messages
		if len(msgs) == 0 {
			msgs = c.New
		}
		f.Add([]byte(msgs), []byte(c.Tools), []byte(c.Kwargs), true)
		if len(c.History) > 0 {
			f.Add([]byte(c.History), []byte(c.Tools), []byte(c.Kwargs), false)
		}
	}
	f.Add([]byte(`[{"role":"user","content":"{{ 7*7 }}{% raw %}"}]`), []byte(`[{"type":"function","function":{"name":"f","parameters":{"properties":{"x":{"type":"%s"}}}}}]`), []byte(`{"enable_thinking":"%s"}`), true)
	f.Add([]byte(`[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"not json"}}]}]`), []byte(`null`), []byte(`{"tools_in_user_message":false,"date_string":null}`), false)
	f.Add([]byte(`[{"role":"tool","content":[{"type":"text","text":"x"},{"type":"image"}]}]`), []byte(`[1,"x",null]`), []byte(`{"messages":[]}`), true)
	names := make([]string, 0, len(tpls))
	for n := range tpls {
		names = append(names, n)
	}
	sort.Strings(names)
	f.Fuzz(func(t *testing.T, msgsJSON, toolsJSON, kwargsJSON []byte, gen bool) {
		msgs, err := tito.DecodeMessages(msgsJSON)
		if err != nil {
			return
		}
		var tools []json.RawMessage
		if len(toolsJSON) > 0 && json.Unmarshal(toolsJSON, &tools) != nil {
			return
		}
		var kwargs map[string]any
		if len(kwargsJSON) > 0 && json.Unmarshal(kwargsJSON, &kwargs) != nil {
			return
		}
		o := tito.RenderOptions{Tools: tools, AddGenerationPrompt: gen, Kwargs: kwargs}
		for _, name := range names {
			tpl := tpls[name]
			out1, err1 := tpl.Render(msgs, o)
			out2, err2 := tpl.Render(msgs, o)
			if out1 != out2 || errText(err1) != errText(err2) {
				t.Fatalf("%s: two renders of one input differ:\n%q (%v)\n%q (%v)", name, out1, err1, out2, err2)
			}
			if len(msgs) > 1 {
				_, _ = tpl.RenderDelta(msgs[:len(msgs)-1], msgs[len(msgs)-1:], o)
			}
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
