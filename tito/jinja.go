package tito

/*
#cgo LDFLAGS: -lagentrt_jinja -ldl -lm -lpthread
#include <stdint.h>
#include <stdlib.h>

typedef struct AgentrtTemplate AgentrtTemplate;
typedef struct { uint8_t *ptr; size_t len; } AgentrtText;
typedef struct { int32_t year, month, day, hour, minute, second, weekday, yday; } AgentrtClock;

int agentrt_jinja_compile(const char *src, size_t len, AgentrtTemplate **out, AgentrtText *msg, uint32_t *line);
int agentrt_jinja_render(const AgentrtTemplate *t, const char *ctx, size_t len, AgentrtClock clock, AgentrtText *out, uint32_t *line);
typedef struct AgentrtVars AgentrtVars;
int agentrt_jinja_vars(const char *vars, size_t len, AgentrtVars **out, AgentrtText *msg);
void agentrt_jinja_free_vars(AgentrtVars *v);
int agentrt_jinja_render_delta(const AgentrtTemplate *t, const AgentrtVars *vars, const char *msgs, size_t len, const uint32_t *ends, size_t n, size_t index, const char *probe, size_t probe_len, _Bool always_probe, _Bool add_generation_prompt, AgentrtClock clock, AgentrtText *out_a, AgentrtText *out_b, int64_t *out_at, uint32_t *line);
int agentrt_jinja_render_with(const AgentrtTemplate *t, const AgentrtVars *vars, const char *msgs, size_t len, const uint32_t *ends, size_t n, _Bool add_generation_prompt, AgentrtClock clock, AgentrtText *out, uint32_t *line);
void agentrt_jinja_free(AgentrtTemplate *t);
void agentrt_jinja_free_text(AgentrtText t);
*/
import "C"

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

// The engine is minijinja (Rust) behind our own small C ABI in tito/jinja, built by scripts/setup.d/15-jinja.sh
// into $AGENTRT_CACHE/lib. Its results: 0 ok, 1 template error, 2 raise_exception, 3 bad call or engine panic.
const (
	jinjaOK     = 0
	jinjaRaised = 2
)

// jinjaTemplate is a compiled template; the engine's handle is freed when it is garbage collected.
type jinjaTemplate struct {
	h *C.AgentrtTemplate
}

func takeText(t C.AgentrtText) string {
	if t.ptr == nil {
		return ""
	}
	s := C.GoStringN((*C.char)(unsafe.Pointer(t.ptr)), C.int(t.len))
	C.agentrt_jinja_free_text(t)
	return s
}

// viewText is t as a Go string over the engine's memory, without copying it (a render at a long context is hundreds
// of KB, and copying it into the Go heap cost every turn its size again); free releases it, after which the
// string and every string cut from it must not be used.
func viewText(t C.AgentrtText) (s string, free func()) {
	if t.ptr == nil {
		return "", func() {}
	}
	return unsafe.String((*byte)(unsafe.Pointer(t.ptr)), int(t.len)), func() { C.agentrt_jinja_free_text(t) }
}

func cBytes(b []byte) (*C.char, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.char)(unsafe.Pointer(&b[0])), C.size_t(len(b))
}

// compileJinja compiles a template in transformers' environment.
func compileJinja(source string) (*jinjaTemplate, *TemplateError) {
	src := []byte(source)
	p, n := cBytes(src)
	var h *C.AgentrtTemplate
	var msg C.AgentrtText
	var line C.uint32_t
	rc := C.agentrt_jinja_compile(p, n, &h, &msg, &line)
	runtime.KeepAlive(src)
	if rc != jinjaOK {
		return nil, &TemplateError{Line: int(line), Message: "syntax error: " + takeText(msg)}
	}
	j := &jinjaTemplate{h: h}
	runtime.AddCleanup(j, func(h *C.AgentrtTemplate) { C.agentrt_jinja_free(h) }, h)
	return j, nil
}

// jinjaVars are render variables (a JSON object) parsed once by the engine; freed when garbage collected.
type jinjaVars struct {
	h *C.AgentrtVars
}

func newJinjaVars(obj []byte) (*jinjaVars, error) {
	p, n := cBytes(obj)
	var h *C.AgentrtVars
	var msg C.AgentrtText
	rc := C.agentrt_jinja_vars(p, n, &h, &msg)
	runtime.KeepAlive(obj)
	if rc != jinjaOK {
		return nil, fmt.Errorf("tito: render: %s", takeText(msg))
	}
	v := &jinjaVars{h: h}
	runtime.AddCleanup(v, func(h *C.AgentrtVars) { C.agentrt_jinja_free_vars(h) }, h)
	return v, nil
}

func cClock(now time.Time) C.AgentrtClock {
	return C.AgentrtClock{
		year: C.int32_t(now.Year()), month: C.int32_t(now.Month()), day: C.int32_t(now.Day()),
		hour: C.int32_t(now.Hour()), minute: C.int32_t(now.Minute()), second: C.int32_t(now.Second()),
		weekday: C.int32_t((int(now.Weekday()) + 6) % 7), yday: C.int32_t(now.YearDay()),
	}
}

func cEnds(ends []uint32) (*C.uint32_t, C.size_t) {
	if len(ends) == 0 {
		return nil, 0
	}
	return (*C.uint32_t)(unsafe.Pointer(&ends[0])), C.size_t(len(ends))
}

// renderWith renders with prepared variables and the messages (encodeMessages').
func (j *jinjaTemplate) renderWith(vars *jinjaVars, msgs encodedMessages, addGenerationPrompt bool, now time.Time) (string, *TemplateError) {
	p, n := cBytes(msgs.json)
	e, ne := cEnds(msgs.ends)
	var out C.AgentrtText
	var line C.uint32_t
	rc := C.agentrt_jinja_render_with(j.h, vars.h, p, n, e, ne, C._Bool(addGenerationPrompt), cClock(now), &out, &line)
	runtime.KeepAlive(msgs.json)
	runtime.KeepAlive(msgs.ends)
	runtime.KeepAlive(j)
	runtime.KeepAlive(vars)
	text := takeText(out)
	if rc != jinjaOK {
		return "", &TemplateError{Raised: rc == jinjaRaised, Line: int(line), Message: text}
	}
	return text, nil
}

// renderDelta renders the messages (encodeMessages') and returns where in the text the template first writes message
// index's content. Where the engine cannot see that (at < 0), or with alwaysProbe, probe is a second render with
// that content replaced by probeContent, sharing one parse of the messages. full and probe are views of the
// engine's memory (viewText): the caller copies what it keeps, then calls free.
func (j *jinjaTemplate) renderDelta(vars *jinjaVars, msgs encodedMessages, index int, probeContent string, alwaysProbe, addGenerationPrompt bool, now time.Time) (full string, at int, probe string, free func(), _ *TemplateError) {
	p, n := cBytes(msgs.json)
	e, ne := cEnds(msgs.ends)
	cb := []byte(probeContent)
	cp, cn := cBytes(cb)
	var a, b C.AgentrtText
	var pos C.int64_t
	var line C.uint32_t
	rc := C.agentrt_jinja_render_delta(j.h, vars.h, p, n, e, ne, C.size_t(index), cp, cn, C._Bool(alwaysProbe), C._Bool(addGenerationPrompt), cClock(now), &a, &b, &pos, &line)
	runtime.KeepAlive(msgs.json)
	runtime.KeepAlive(msgs.ends)
	runtime.KeepAlive(cb)
	runtime.KeepAlive(j)
	runtime.KeepAlive(vars)
	if rc != jinjaOK {
		takeText(b)
		return "", -1, "", func() {}, &TemplateError{Raised: rc == jinjaRaised, Line: int(line), Message: takeText(a)}
	}
	full, freeA := viewText(a)
	probe, freeB := viewText(b)
	return full, int(pos), probe, func() { freeA(); freeB() }, nil
}
