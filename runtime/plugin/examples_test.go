package plugin_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/plugins/builtin"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/plugin"
)

var weatherTools = []abi.ToolSpec{
	{Name: "get_weather", Parameters: abi.RawJSON(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
	{Name: "get_time", Parameters: abi.RawJSON(`{"type":"object"}`)},
}

// TestGoExampleParser runs plugins/examples/go-xmltag (the Go SDK's example parser) through the host.
func TestGoExampleParser(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	m := load(t, h, plugin.Spec{Name: "xmltag.wasm", Wasm: repoFile(t, "plugins/examples/go-xmltag/xmltag.wasm"), Trusted: true, PoolSize: 1, Tools: weatherTools})
	p, err := m.Parser()
	if err != nil {
		t.Fatal(err)
	}
	text := "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n" +
		"<tool_call>{\"name\": \"get_time\"}</tool_call>" +
		"<tool_call>{\"name\": \"launch_rockets\", \"arguments\": {}}</tool_call>" +
		"<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": }}</tool_call>" +
		"<tool_call>{\"arguments\": {}}</tool_call>" +
		"<tool_call>{\"name\": \"get_time\", \"arguments\": [1]}</tool_call>" +
		" done <tool_call>{\"name\": \"get_weather\""
	res, err := p.Parse(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Calls) != 2 || res.Calls[0].Name != "get_weather" || string(res.Calls[0].Arguments) != `{"city": "Paris"}` ||
		res.Calls[1].Name != "get_time" || string(res.Calls[1].Arguments) != `{}` {
		t.Fatalf("calls %+v", res.Calls)
	}
	wantReasons := []string{abi.ReasonUnknownTool, abi.ReasonMalformedJSON, abi.ReasonMissingName, abi.ReasonBadArguments, abi.ReasonUnclosedTag}
	if len(res.Errors) != len(wantReasons) {
		t.Fatalf("errors %+v", res.Errors)
	}
	for i, e := range res.Errors {
		if e.Reason != wantReasons[i] || text[e.Span[0]:e.Span[1]] != e.Raw {
			t.Errorf("error %d = %+v; want reason %s and raw == text[span]", i, e, wantReasons[i])
		}
	}
	for _, c := range res.Calls {
		if !strings.HasPrefix(text[c.Span[0]:c.Span[1]], "<tool_call>") || !strings.HasSuffix(text[c.Span[0]:c.Span[1]], "</tool_call>") {
			t.Errorf("call span %v covers %q", c.Span, text[c.Span[0]:c.Span[1]])
		}
	}
	if res.NormalText != "Let me check.\n\n done " {
		t.Errorf("normal text %q", res.NormalText)
	}

	// Config at init: other tags.
	m2 := load(t, h, plugin.Spec{Name: "xmltag.wasm", Wasm: repoFile(t, "plugins/examples/go-xmltag/xmltag.wasm"), Trusted: true, PoolSize: 1,
		Config: []byte(`{"open":"[CALL]","close":"[/CALL]"}`)})
	p2, _ := m2.Parser()
	res, err = p2.Parse(context.Background(), `x[CALL]{"name":"anything","arguments":{"a":1}}[/CALL]`)
	if err != nil || len(res.Calls) != 1 || res.Calls[0].Name != "anything" || res.NormalText != "x" {
		t.Fatalf("configured tags: %+v, %v", res, err)
	}
	if m2.SHA256() != m.SHA256() {
		t.Error("same binary, different sha256")
	}
}

// TestHammer runs many concurrent calls on small pools of every kind (run with -race).
func TestHammer(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	calc := load(t, h, plugin.Spec{Name: "calc", Wasm: builtin.Calculator, Trusted: true, PoolSize: 2})
	tool, _ := calc.Tool()
	lim := load(t, h, plugin.Spec{Name: "lim", Wasm: builtin.Limiter, Trusted: true, PoolSize: 2, Config: []byte(`{"max_tool_iters":3}`)})
	hook, _ := lim.Hook()
	trap := load(t, h, plugin.Spec{Name: "trap", Wasm: wasm(t, "wat/trap.wasm"), PoolSize: 2})
	trapTool, _ := trap.Tool()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			ctx := context.Background()
			for i := 0; i < 40; i++ {
				res, err := tool.Call(ctx, "calculator", []byte(fmt.Sprintf(`{"expression":"%d * %d"}`, g, i)))
				if err != nil || res.Text != fmt.Sprint(g*i) {
					errs <- fmt.Errorf("calc %d*%d = %+v, %v", g, i, res, err)
					return
				}
				resp, err := hook.Handle(ctx, &abi.Event{Event: abi.EventMessageAdded, Counts: abi.Counts{ToolIters: i % 5}, Message: &abi.Message{Role: abi.RoleTool}})
				if err != nil || (resp.Stop != nil) != (i%5 >= 3) {
					errs <- fmt.Errorf("hook iters %d: %+v, %v", i%5, resp, err)
					return
				}
				if i%10 == 0 {
					if _, err := trapTool.Call(ctx, "noop", nil); err == nil {
						errs <- fmt.Errorf("trap guest did not trap")
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if calc.Replaced() != 0 || lim.Replaced() != 0 || trap.Replaced() != 32 {
		t.Errorf("replaced: calc %d lim %d trap %d (want 0 0 32)", calc.Replaced(), lim.Replaced(), trap.Replaced())
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := plugin.NewHost(ctx, plugin.Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	m := load(t, h, plugin.Spec{Name: "noop.wasm", Wasm: wasm(t, "wat/noop.wasm"), PoolSize: 1})
	tool, _ := m.Tool()
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tool.Call(ctx, "noop", nil); err != plugin.ErrClosed {
		t.Fatalf("call after Close: %v, want ErrClosed", err)
	}
	if _, err := h.Load(ctx, plugin.Spec{Name: "noop.wasm", Wasm: wasm(t, "wat/noop.wasm")}); err != plugin.ErrClosed {
		t.Fatalf("Load after Close: %v, want ErrClosed", err)
	}
}
