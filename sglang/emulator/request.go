package emulator

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// reqError is why a /generate request is refused before it runs, in SGLang's three failure classes.
type reqError struct {
	kind int // errValidation, errValue, errInternal
	msg  string
}

const (
	errValidation = iota // pydantic: 400 {"object":"error",...,"type":"Bad Request"}
	errValue             // ValueError: 400 {"error":{"message"}} (SSE error event when streaming)
	errInternal          // uncaught TypeError: 500 "Internal Server Error"
	errContract          // api_contract.generate_contract_error: 400 {"error": "unknown field ..."}
)

func validationErr(field, typ, msg string, input json.RawMessage) *reqError {
	in := string(input)
	if len(in) > 80 {
		in = in[:80] + "..."
	}
	loc := "('body',)"
	if field != "" {
		loc = "('body', '" + field + "')"
	}
	d := fmt.Sprintf("{'type': '%s', 'loc': %s, 'msg': '%s', 'input': %s}", typ, loc, msg, in)
	return &reqError{kind: errValidation, msg: "1 validation error:\n  " + d + " [" + d + "]"}
}

func valueErr(format string, args ...any) *reqError {
	return &reqError{kind: errValue, msg: fmt.Sprintf(format, args...)}
}

// samplingParams is the subset of SGLang's SamplingParams the emulator acts on.
type samplingParams struct {
	maxNewTokens      int  // -1: null (unlimited)
	maxNewSet         bool // given explicitly (only then does the tokenizer manager check input + max_new_tokens)
	stopTokenIDs      []int32
	stop              []string
	ignoreEOS         bool
	skipSpecialTokens bool
	noStopTrim        bool
	n                 int
	streamInterval    int
	greedy            bool  // temperature < 1e-6 or top_k = 1: SGLang takes the argmax
	samplingSeed      int64 // sampling_seed (meaningful when hasSeed)
	hasSeed           bool
}

// samplingFields are SamplingParams' fields in the order of SGLang 0.5.23's api_types (_FIELDS_SamplingParams),
// which its contract error lists.
var samplingFields = []string{"max_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature", "top_p",
	"top_k", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty", "min_new_tokens", "n",
	"json_schema", "regex", "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens",
	"spaces_between_special_tokens", "no_stop_trim", "stream_interval", "logit_bias", "sampling_seed",
	"custom_params", "beam_width", "watermark", "choice"}

// knownSamplingKey reports whether k is a SamplingParams field.
func knownSamplingKey(k string) bool { return slices.Contains(samplingFields, k) }

// unknownFieldErr is SGLang's contract error for an unknown key (serde's unknown_field text).
func unknownFieldErr(key string, fields []string) *reqError {
	quoted := make([]string, len(fields))
	for i, f := range fields {
		quoted[i] = "`" + f + "`"
	}
	return &reqError{kind: errContract, msg: "unknown field `" + key + "`, expected one of " + strings.Join(quoted, ", ")}
}

// genItem is one generation of a (possibly batched) /generate request.
type genItem struct {
	index           int
	rid             string
	inputIDs        []int32
	params          samplingParams
	returnLogprob   bool
	logprobStartLen int
	topLogprobsNum  int
	tokenIDsLogprob []int32
	sample          int
	clientRID       string // the rid the client gave this item ("" when none); it picks the sample
	extraKey        string
	abortMsg        string // scheduler-side abort (400) decided at admission

	after    <-chan struct{} // batch: the previous item's prefill is done
	admitted chan struct{}   // closed when this item's prefill is done
}

type genRequest struct {
	items                []*genItem
	batch                bool
	stream               bool
	returnTextInLogprobs bool
	returnPromptTokenIDs bool
	firstRID             string
}

// num is a JSON number with how it was written (int literal or not), for Python-style messages.
func parseNum(raw json.RawMessage) (pyNum, bool) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" || s[0] == '"' || s[0] == '[' || s[0] == '{' || s == "true" || s == "false" {
		return pyNum{}, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return pyNum{}, false
	}
	return pyNum{f: f, isInt: !strings.ContainsAny(s, ".eE")}, true
}

func isNull(raw json.RawMessage) bool { return raw == nil || string(bytes.TrimSpace(raw)) == "null" }

// parseIntLax accepts an int, or a float with no fraction (pydantic's lax mode).
func parseIntLax(raw json.RawMessage) (int, bool) {
	n, ok := parseNum(raw)
	if !ok || n.f != math.Trunc(n.f) || math.Abs(n.f) > 1<<53 {
		return 0, false
	}
	return int(n.f), true
}

func parseBool(raw json.RawMessage) (bool, bool) {
	switch strings.TrimSpace(string(raw)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// perItem splits a field that may be a scalar or a per-item list; list reports whether it was a list.
func perItem(raw json.RawMessage) (items []json.RawMessage, list bool) {
	t := bytes.TrimSpace(raw)
	if len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &items); err == nil {
			return items, true
		}
	}
	return []json.RawMessage{raw}, false
}

func pick(items []json.RawMessage, list bool, i int) json.RawMessage {
	if !list {
		return items[0]
	}
	if i < len(items) {
		return items[i]
	}
	return nil
}

// parseIDs decodes [int] or [[int]].
func parseIDs(raw json.RawMessage) (single []int32, batch [][]int32, err *reqError) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '[' {
		return nil, nil, validationErr("input_ids", "list_type", "Input should be a valid list", raw)
	}
	if ids, ok := parseIntList(t); ok {
		return ids, nil, nil
	}
	if json.Unmarshal(t, &single) == nil {
		return single, nil, nil
	}
	if json.Unmarshal(t, &batch) == nil {
		return nil, batch, nil
	}
	// slow path: find what is wrong, pydantic style
	var any []json.RawMessage
	_ = json.Unmarshal(t, &any)
	for _, e := range any {
		et := bytes.TrimSpace(e)
		if len(et) > 0 && et[0] == '[' {
			var inner []json.RawMessage
			_ = json.Unmarshal(et, &inner)
			for _, x := range inner {
				if _, ok := parseIntLax(x); !ok {
					return nil, nil, validationErr("input_ids", "int_parsing", "Input should be a valid integer", x)
				}
			}
			continue
		}
		if _, ok := parseIntLax(e); !ok {
			return nil, nil, validationErr("input_ids", "int_parsing", "Input should be a valid integer", e)
		}
	}
	// lax ints (1.0): decode through float64
	var fs []float64
	if json.Unmarshal(t, &fs) == nil {
		single = make([]int32, len(fs))
		for i, f := range fs {
			single[i] = int32(f)
		}
		return single, nil, nil
	}
	var fss [][]float64
	if json.Unmarshal(t, &fss) == nil {
		batch = make([][]int32, len(fss))
		for i, r := range fss {
			batch[i] = make([]int32, len(r))
			for j, f := range r {
				batch[i][j] = int32(f)
			}
		}
		return nil, batch, nil
	}
	return nil, nil, validationErr("input_ids", "list_type", "Input should be a valid list", raw)
}

// parseSampling decodes and verifies one sampling_params object like SamplingParams(**d).verify().
func parseSampling(raw json.RawMessage) (samplingParams, *reqError) {
	p := samplingParams{maxNewTokens: 128, skipSpecialTokens: true, n: 1, streamInterval: 1}
	if isNull(raw) {
		return p, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return p, validationErr("sampling_params", "dict_type", "Input should be a valid dictionary", raw)
	}
	// SGLang 0.5.23 checks /generate bodies against its api_types first: the first unknown key (in the body's
	// order) is a 400 naming it.
	unknown, at := "", len(raw)
	for k := range m {
		if !knownSamplingKey(k) {
			if i := bytes.Index(raw, []byte(strconv.Quote(k))); i >= 0 && i < at || unknown == "" {
				unknown, at = k, max(i, 0)
			}
		}
	}
	if unknown != "" {
		return p, unknownFieldErr(unknown, samplingFields)
	}
	internal := func(k string) *reqError {
		return &reqError{kind: errInternal, msg: "sampling_params." + k + " has the wrong type"}
	}
	num := func(k string, def float64) (pyNum, *reqError) {
		v, ok := m[k]
		if !ok || isNull(v) {
			return pyNum{f: def}, nil
		}
		n, ok := parseNum(v)
		if !ok {
			return n, internal(k)
		}
		return n, nil
	}
	intv := func(k string, def int) (int, *reqError) {
		v, ok := m[k]
		if !ok || isNull(v) {
			return def, nil
		}
		n, ok := parseIntLax(v)
		if !ok {
			return 0, internal(k)
		}
		return n, nil
	}
	boolv := func(k string, def bool) (bool, *reqError) {
		v, ok := m[k]
		if !ok || isNull(v) {
			return def, nil
		}
		b, ok := parseBool(v)
		if !ok {
			return false, internal(k)
		}
		return b, nil
	}
	var e *reqError
	first := func(err *reqError) {
		if e == nil && err != nil {
			e = err
		}
	}
	temp, err := num("temperature", 1)
	first(err)
	topP, err := num("top_p", 1)
	first(err)
	minP, err := num("min_p", 0)
	first(err)
	topK, err := intv("top_k", -1)
	first(err)
	freq, err := num("frequency_penalty", 0)
	first(err)
	pres, err := num("presence_penalty", 0)
	first(err)
	rep, err := num("repetition_penalty", 1)
	first(err)
	minNew, err := intv("min_new_tokens", 0)
	first(err)
	maxNew := 128
	if v, ok := m["max_new_tokens"]; ok {
		p.maxNewSet = !isNull(v)
		if isNull(v) {
			maxNew = -1
		} else if n, ok := parseIntLax(v); ok {
			maxNew = n
			if n < 0 {
				first(valueErr("max_new_tokens must be at least 0, got %d.", n))
			}
		} else {
			first(internal("max_new_tokens"))
		}
	}
	p.maxNewTokens = maxNew
	p.n, err = intv("n", 1)
	first(err)
	p.streamInterval, err = intv("stream_interval", 1)
	first(err)
	p.ignoreEOS, err = boolv("ignore_eos", false)
	first(err)
	p.skipSpecialTokens, err = boolv("skip_special_tokens", true)
	first(err)
	p.noStopTrim, err = boolv("no_stop_trim", false)
	first(err)
	if v, ok := m["sampling_seed"]; ok && !isNull(v) {
		n, ok := parseIntLax(v)
		if !ok {
			first(internal("sampling_seed"))
		}
		p.samplingSeed, p.hasSeed = int64(n), true
	}
	if v, ok := m["stop_token_ids"]; ok && !isNull(v) {
		if json.Unmarshal(v, &p.stopTokenIDs) != nil {
			first(internal("stop_token_ids"))
		}
	}
	if v, ok := m["stop"]; ok && !isNull(v) {
		var s string
		if json.Unmarshal(v, &s) == nil {
			p.stop = []string{s}
		} else if json.Unmarshal(v, &p.stop) != nil {
			first(internal("stop"))
		}
	}
	if e != nil {
		return p, e
	}
	// SamplingParams.verify, in its order (the newest messages at sglang@8905cbd).
	topKShown := topK
	if topK == -1 {
		topK = 1 << 30
	}
	if 0 <= temp.f && temp.f < 1e-6 {
		topK = 1 // greedy
	}
	grammars := 0
	for _, k := range []string{"json_schema", "regex", "ebnf"} {
		if v, ok := m[k]; ok && !isNull(v) {
			grammars++
		}
	}
	switch {
	case math.IsNaN(temp.f) || math.IsInf(temp.f, 0) || temp.f < 0:
		return p, valueErr("temperature must be a non-negative finite number, got %s.", temp)
	case !(0 < topP.f && topP.f <= 1):
		return p, valueErr("top_p must be in (0, 1], got %s.", topP)
	case !(0 <= minP.f && minP.f <= 1):
		return p, valueErr("min_p must be in [0, 1], got %s.", minP)
	case topK < 1:
		return p, valueErr("top_k must be -1 (disable) or at least 1, got %d.", topKShown)
	case !(-2 <= freq.f && freq.f <= 2):
		return p, valueErr("frequency_penalty must be in [-2, 2], got %s.", freq)
	case !(-2 <= pres.f && pres.f <= 2):
		return p, valueErr("presence_penalty must be in [-2, 2], got %s.", pres)
	case !(0 < rep.f && rep.f <= 2):
		return p, valueErr("repetition_penalty must be in (0, 2] (1.0 = no penalty), got %s.", rep)
	case minNew < 0:
		return p, valueErr("min_new_tokens must be in [0, max_new_tokens], got %d.", minNew)
	case maxNew >= 0 && minNew > maxNew:
		return p, valueErr("min_new_tokens must be in [0, max_new_tokens(%d)], got %d.", maxNew, minNew)
	case grammars > 1:
		return p, valueErr("Only one of regex, json_schema, or ebnf can be set.")
	case p.n < 1:
		return p, valueErr("n must be at least 1, got %d.", p.n)
	}
	if p.streamInterval < 1 {
		p.streamInterval = 1
	}
	p.greedy = topK == 1 // the sampler's is_all_greedy test
	return p, nil
}

func newRID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// parseGenerate turns a /generate body into items, with SGLang's validation order: pydantic types first, then
// the tokenizer manager's ValueErrors, then the context-length checks. Scheduler-side aborts are left in
// item.abortMsg.
func parseGenerate(body []byte, tok Tokenizer, contextLen int) (*genRequest, *reqError) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		t := bytes.TrimSpace(body)
		if len(t) > 0 && t[0] != '{' && json.Valid(t) {
			return nil, validationErr("", "model_attributes_type", "Input should be a valid dictionary or object to extract fields from", json.RawMessage(t))
		}
		return nil, &reqError{kind: errValidation, msg: "1 validation error:\n  {'type': 'json_invalid', 'loc': ('body', 0), 'msg': 'JSON decode error', 'input': {}, 'ctx': {'error': 'Expecting value'}} [{'type': 'json_invalid', 'loc': ('body', 0), 'msg': 'JSON decode error', 'input': {}, 'ctx': {'error': 'Expecting value'}}]"}
	}
	r := &genRequest{}
	// pydantic type checks of the top-level fields
	for _, k := range []string{"stream", "return_text_in_logprobs", "return_prompt_token_ids"} {
		if v, ok := m[k]; ok && !isNull(v) {
			b, ok := parseBool(v)
			if !ok {
				return nil, validationErr(k, "bool_type", "Input should be a valid boolean", v)
			}
			switch k {
			case "stream":
				r.stream = b
			case "return_text_in_logprobs":
				r.returnTextInLogprobs = b
			case "return_prompt_token_ids":
				r.returnPromptTokenIDs = b
			}
		}
	}
	var texts []string
	var ids [][]int32
	hasText, hasIDs := !isNull(m["text"]), !isNull(m["input_ids"])
	if !isNull(m["input_embeds"]) {
		return nil, valueErr("input_embeds is not supported by the emulator")
	}
	if hasText {
		var s string
		if json.Unmarshal(m["text"], &s) == nil {
			texts = []string{s}
		} else if json.Unmarshal(m["text"], &texts) == nil {
			r.batch = true
		} else {
			return nil, validationErr("text", "string_type", "Input should be a valid string", m["text"])
		}
	}
	if hasIDs {
		single, batch, err := parseIDs(m["input_ids"])
		if err != nil {
			return nil, err
		}
		if batch != nil {
			ids = batch
			r.batch = true
		} else {
			ids = [][]int32{single}
		}
	}
	// the rest of the per-item fields: type checks
	rids, ridList := perItem(m["rid"])
	if !isNull(m["rid"]) {
		for _, v := range rids {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return nil, validationErr("rid", "string_type", "Input should be a valid string", v)
			}
		}
	}
	type field struct {
		vals []json.RawMessage
		list bool
	}
	fields := map[string]*field{}
	for _, k := range []string{"return_logprob", "logprob_start_len", "top_logprobs_num", "sampling_params", "extra_key"} {
		vals, list := perItem(m[k])
		fields[k] = &field{vals, list}
		for _, v := range vals {
			if isNull(v) {
				continue
			}
			var ok bool
			switch k {
			case "return_logprob":
				_, ok = parseBool(v)
			case "logprob_start_len", "top_logprobs_num":
				_, ok = parseIntLax(v)
			case "sampling_params":
				t := bytes.TrimSpace(v)
				ok = len(t) > 0 && t[0] == '{'
			case "extra_key":
				var s string
				ok = json.Unmarshal(v, &s) == nil
			}
			if !ok {
				return nil, validationErr(k, "type_error", "Input has the wrong type", v)
			}
		}
	}
	var tokIDsSingle []int32
	var tokIDsBatch [][]int32
	if v := m["token_ids_logprob"]; !isNull(v) {
		var err *reqError
		tokIDsSingle, tokIDsBatch, err = parseIDs(v)
		if err != nil {
			err.msg = strings.ReplaceAll(err.msg, "'input_ids'", "'token_ids_logprob'")
			return nil, err
		}
	}

	// GenerateReqInput normalisation (ValueErrors)
	if (!hasText && !hasIDs) || (hasText && hasIDs) {
		return nil, valueErr("Either text, input_ids or input_embeds should be provided.")
	}
	if hasText {
		ids = make([][]int32, len(texts))
		for i, t := range texts {
			ids[i] = tok.Encode(t, true)
		}
	}
	if len(ids) == 0 {
		return nil, valueErr("input_ids cannot be empty.")
	}
	for _, x := range ids {
		if len(x) == 0 {
			return nil, valueErr("input_ids cannot be empty.")
		}
	}
	nPrompts := len(ids)
	if ridList && len(rids) != nPrompts {
		return nil, valueErr("The specified rids length mismatch with the batch_size for batch processing.")
	}
	for k, f := range fields {
		if f.list && len(f.vals) != nPrompts && k != "sampling_params" {
			return nil, valueErr("The length of %s (%d) does not match the batch size (%d).", k, len(f.vals), nPrompts)
		}
	}
	// sampling params per prompt
	params := make([]samplingParams, nPrompts)
	for i := range params {
		var err *reqError
		params[i], err = parseSampling(pick(fields["sampling_params"].vals, fields["sampling_params"].list, i))
		if err != nil {
			return nil, err
		}
	}
	n := params[0].n
	for _, p := range params {
		if p.n != n {
			return nil, valueErr("The parallel_sample_size should be the same for all samples in sample params.")
		}
	}
	if n > 1 {
		r.batch = true
		for _, k := range []string{"logprob_start_len", "top_logprobs_num"} {
			if fields[k].list {
				return nil, valueErr("%s must be a scalar when n > 1.", k)
			}
		}
	}
	baseRID := ""
	if !isNull(m["rid"]) && !ridList {
		_ = json.Unmarshal(rids[0], &baseRID)
	}
	seen := map[string]bool{}
	for i := 0; i < nPrompts; i++ {
		for s := 0; s < n; s++ {
			it := &genItem{index: len(r.items), inputIDs: ids[i], params: params[i], sample: s, logprobStartLen: -1}
			given := true
			switch {
			case ridList:
				_ = json.Unmarshal(rids[i], &it.clientRID)
			case baseRID != "" && r.batch:
				it.clientRID = fmt.Sprintf("%s_%d", baseRID, i)
			case baseRID != "":
				it.clientRID = baseRID
			default:
				given = false
			}
			it.rid = it.clientRID
			if n > 1 || !given {
				it.rid = newRID() // with n > 1 every sample gets a fresh uuid rid, as in SGLang
			}
			if seen[it.rid] {
				return nil, valueErr("Duplicate request ID detected: %s", it.rid)
			}
			seen[it.rid] = true
			if v := pick(fields["return_logprob"].vals, fields["return_logprob"].list, i); !isNull(v) {
				it.returnLogprob, _ = parseBool(v)
			}
			if v := pick(fields["logprob_start_len"].vals, fields["logprob_start_len"].list, i); !isNull(v) {
				it.logprobStartLen, _ = parseIntLax(v)
			}
			if v := pick(fields["top_logprobs_num"].vals, fields["top_logprobs_num"].list, i); !isNull(v) {
				it.topLogprobsNum, _ = parseIntLax(v)
			}
			if v := pick(fields["extra_key"].vals, fields["extra_key"].list, i); !isNull(v) {
				_ = json.Unmarshal(v, &it.extraKey)
			}
			switch {
			case tokIDsBatch != nil && i < len(tokIDsBatch):
				it.tokenIDsLogprob = tokIDsBatch[i]
			case tokIDsSingle != nil:
				it.tokenIDsLogprob = tokIDsSingle
			}
			r.items = append(r.items, it)
		}
	}
	// TokenizerManager._validate_one_request: context length
	for _, it := range r.items {
		in := len(it.inputIDs)
		if in >= contextLen {
			return nil, valueErr("The input (%d tokens) is longer than the model's context length (%d tokens).", in, contextLen)
		}
		// SGLang 0.5.23 refuses a total above the context length; one equal to it is served
		if mx := it.params.maxNewTokens; it.params.maxNewSet && mx+in > contextLen {
			return nil, valueErr("Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.", contextLen, mx+in, in, mx)
		}
		for _, id := range it.tokenIDsLogprob {
			if id < 0 {
				return nil, valueErr("token_ids_logprob contains an invalid token id %d.", id)
			}
		}
		// Scheduler.handle_generate_request: logprob_start_len
		if it.returnLogprob && it.logprobStartLen > in {
			it.abortMsg = fmt.Sprintf("req.logprob_start_len=%d is higher than the number of input tokens len(req.origin_input_ids)=%d. Please use a smaller logprob_start_len.", it.logprobStartLen, in)
		}
		if !it.returnLogprob {
			it.logprobStartLen = -1
		}
	}
	r.firstRID = r.items[0].rid
	return r, nil
}

// parseIntList is a fast path for a flat JSON list of int32s ("[1, 2, 3]"); false sends the caller to the
// general decoder.
func parseIntList(b []byte) ([]int32, bool) {
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, false
	}
	out := make([]int32, 0, len(b)/6)
	i, n := 1, len(b)-1
	skip := func() {
		for i < n && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
		}
	}
	skip()
	if i == n {
		return out, true
	}
	for {
		skip()
		neg := false
		if i < n && b[i] == '-' {
			neg = true
			i++
		}
		start := i
		var v int64
		for i < n && b[i] >= '0' && b[i] <= '9' {
			v = v*10 + int64(b[i]-'0')
			if v > 1<<31 {
				return nil, false
			}
			i++
		}
		if i == start || (i-start > 1 && b[start] == '0') {
			return nil, false
		}
		if neg {
			v = -v
		}
		if v > 1<<31-1 || v < -(1<<31) {
			return nil, false
		}
		out = append(out, int32(v))
		skip()
		if i == n {
			return out, true
		}
		if b[i] != ',' {
			return nil, false
		}
		i++
	}
}
