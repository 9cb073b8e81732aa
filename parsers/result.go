package parsers

import (
	"encoding/json"
	"strconv"
)

// Reason says why a tool call could not be parsed. Reasons are stable strings: trajectories count parse errors
// per reason, and the runtime turns each error into a tool error result that carries the raw text.
type Reason string

// The reasons a tool call is rejected. Parsers never repair a call: each rejected call yields exactly one Error.
const (
	// ReasonMalformedJSON: the call's JSON (the call object, or its arguments) is not valid JSON.
	ReasonMalformedJSON Reason = "malformed_json"
	// ReasonUnknownTool: the call names a tool that is not in the tool specs given to the parser.
	ReasonUnknownTool Reason = "unknown_tool"
	// ReasonMissingName: the call has no tool name, an empty one, or a name that is not a string.
	ReasonMissingName Reason = "missing_name"
	// ReasonBadArguments: the arguments are not a JSON object, a key repeats, or they break the argument policy
	// (plugins/ABI.md 5.1): a value of another type than the schema declares (XML formats: text that does not
	// read as it), outside its enum or minimum/maximum, a required parameter missing or null, an undeclared one
	// under additionalProperties: false.
	ReasonBadArguments Reason = "bad_arguments"
	// ReasonUnclosedTag: a call's markup opens but never closes (typically a completion cut at max_new_tokens).
	ReasonUnclosedTag Reason = "unclosed_tag"
	// ReasonInvalidFormat: the markup of a call is not what the format prescribes (stray text between
	// parameters, a JSON list instead of an object, a bad call id, ...).
	ReasonInvalidFormat Reason = "invalid_format"
)

// Call is one well-formed tool call.
type Call struct {
	// ID is "call_0000", "call_0001", ... in order of appearance in the completion, counting rejected calls
	// (Errors) too; a format whose calls carry the model's own id (Mistral's) returns that id instead.
	ID string
	// Name is the tool name.
	Name string
	// Arguments is a compact JSON object (insignificant whitespace removed, key order and string escapes kept as
	// the model wrote them, or the values coerced by the tool schema for the XML formats).
	Arguments json.RawMessage
	// Span is the call's markup as byte offsets [start, end) into the parsed text.
	Span [2]int
}

// Error is one rejected tool call.
type Error struct {
	// ID is the call id this rejected call takes in the response (see Call.ID).
	ID string
	// Reason is the machine-readable cause.
	Reason Reason
	// Name is the tool name when it could be read, else "".
	Name string
	// Message is a human-readable explanation (what and where), suitable for feeding back to the model.
	Message string
	// Raw is the rejected markup, verbatim: Raw == text[Span[0]:Span[1]].
	Raw string
	// Span is the rejected markup as byte offsets [start, end) into the parsed text.
	Span [2]int
}

// Result is what a parser extracts from one completion.
type Result struct {
	// Calls are the well-formed calls, in order of appearance.
	Calls []Call
	// NormalText is the completion with every tool-call block (well-formed or not) cut out, trimmed of
	// surrounding whitespace. Think blocks are kept: the parser does not separate reasoning from content.
	NormalText string
	// Errors are the rejected calls, in order of appearance.
	Errors []Error

	sc *scratch // reused by ParseInto
}

// callIDs holds call_0000 ... call_0063 back to back, so that common ids are substrings, not allocations.
const callIDs = "call_0000call_0001call_0002call_0003call_0004call_0005call_0006call_0007call_0008call_0009call_0010call_0011call_0012call_0013call_0014call_0015call_0016call_0017call_0018call_0019call_0020call_0021call_0022call_0023call_0024call_0025call_0026call_0027call_0028call_0029call_0030call_0031call_0032call_0033call_0034call_0035call_0036call_0037call_0038call_0039call_0040call_0041call_0042call_0043call_0044call_0045call_0046call_0047call_0048call_0049call_0050call_0051call_0052call_0053call_0054call_0055call_0056call_0057call_0058call_0059call_0060call_0061call_0062call_0063"

// callID formats the n-th call id of a response: call_0000, call_0001, ...
func callID(n int) string {
	if n < len(callIDs)/9 {
		return callIDs[n*9 : n*9+9]
	}
	if n >= 10000 {
		return "call_" + strconv.Itoa(n)
	}
	b := [9]byte{'c', 'a', 'l', 'l', '_', '0', '0', '0', '0'}
	for i := 8; n > 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[:])
}

// AppendJSON appends r as the ParseResult JSON of the plugin ABI (plugins/ABI.md section 5.1):
//
//	{"calls":[{"id","name","arguments","span":[s,e]}],"normal_text":"...",
//	 "errors":[{"id","reason","name","message","raw","span":[s,e]}]}
//
// calls and errors are always arrays (possibly empty); "name" of an error is omitted when unknown. The "id" and
// "name" of errors are additions to the ABI's ParseError (hosts ignore fields they do not know).
func (r *Result) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"calls":[`...)
	for i := range r.Calls {
		c := &r.Calls[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = appendQuoted(dst, c.ID)
		dst = append(dst, `,"name":`...)
		dst = appendQuoted(dst, c.Name)
		dst = append(dst, `,"arguments":`...)
		if len(c.Arguments) == 0 {
			dst = append(dst, "{}"...)
		} else {
			dst = append(dst, c.Arguments...)
		}
		dst = appendSpan(dst, c.Span)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"normal_text":`...)
	dst = appendQuoted(dst, r.NormalText)
	dst = append(dst, `,"errors":[`...)
	for i := range r.Errors {
		e := &r.Errors[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = appendQuoted(dst, e.ID)
		dst = append(dst, `,"reason":`...)
		dst = appendQuoted(dst, string(e.Reason))
		if e.Name != "" {
			dst = append(dst, `,"name":`...)
			dst = appendQuoted(dst, e.Name)
		}
		dst = append(dst, `,"message":`...)
		dst = appendQuoted(dst, e.Message)
		dst = append(dst, `,"raw":`...)
		dst = appendQuoted(dst, e.Raw)
		dst = appendSpan(dst, e.Span)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

func appendSpan(dst []byte, s [2]int) []byte {
	dst = append(dst, `,"span":[`...)
	dst = strconv.AppendInt(dst, int64(s[0]), 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, int64(s[1]), 10)
	return append(dst, ']')
}
