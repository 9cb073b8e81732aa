package parsers

import "strings"

// deepseekv3 (DeepSeek V3 and R1) and deepseekv31 (DeepSeek V3.1): special-token sections, as the chat
// templates write them.
//
//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//	```json
//	{"city": "Paris"}
//	```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//
// V3.1 drops the type and the code fence: <｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>.
// Only whitespace may separate the calls of a section; the arguments must be one JSON object. Reasoning is
// <think>...</think> (R1, V3.1 thinking mode).

const (
	dsSep       = "<｜tool▁sep｜>"
	dsFenceOpen = "```json"
	dsFence     = "```"
)

var deepseekTags = sectionTags{"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"}

func scanDeepSeekV3(st *state, seg segment) {
	scanSections(st, seg, &deepseekTags, (*state).deepseekV3Call)
}

func scanDeepSeekV31(st *state, seg segment) {
	scanSections(st, seg, &deepseekTags, (*state).deepseekV31Call)
}

// deepseekV3Call parses "TYPE<｜tool▁sep｜>NAME\n```json\n{...}\n```".
func (st *state) deepseekV3Call(body string, lo, hi int) {
	sep := strings.Index(body, dsSep)
	if sep < 0 {
		st.fail(ReasonInvalidFormat, "", "the tool call has no "+dsSep, lo, hi)
		return
	}
	if typ := strings.TrimSpace(body[:sep]); typ != "function" {
		st.fail(ReasonInvalidFormat, "", "tool call type "+quote(clip(typ))+" (want function)", lo, hi)
		return
	}
	rest := body[sep+len(dsSep):]
	nl := strings.IndexByte(rest, '\n')
	if nl < 0 {
		st.fail(ReasonInvalidFormat, "", "the function name is not followed by a ```json block", lo, hi)
		return
	}
	name := strings.TrimSpace(rest[:nl])
	if !deepseekName(st, name, lo, hi) {
		return
	}
	args := strings.TrimSpace(rest[nl+1:])
	if !strings.HasPrefix(args, dsFenceOpen) || !strings.HasSuffix(args, dsFence) || len(args) < len(dsFenceOpen)+len(dsFence) {
		st.fail(ReasonInvalidFormat, name, "the arguments are not one ```json ... ``` block", lo, hi)
		return
	}
	st.jsonObjectCall(name, args[len(dsFenceOpen):len(args)-len(dsFence)], lo, hi)
}

// deepseekV31Call parses "NAME<｜tool▁sep｜>{...}".
func (st *state) deepseekV31Call(body string, lo, hi int) {
	sep := strings.Index(body, dsSep)
	if sep < 0 {
		st.fail(ReasonInvalidFormat, "", "the tool call has no "+dsSep, lo, hi)
		return
	}
	name := strings.TrimSpace(body[:sep])
	if !deepseekName(st, name, lo, hi) {
		return
	}
	st.jsonObjectCall(name, body[sep+len(dsSep):], lo, hi)
}

func deepseekName(st *state, name string, lo, hi int) bool {
	switch {
	case name == "":
		st.fail(ReasonMissingName, "", "the tool call has no function name", lo, hi)
	case !validName(name):
		st.fail(ReasonInvalidFormat, "", "bad function name "+quote(clip(name)), lo, hi)
	default:
		return true
	}
	return false
}
