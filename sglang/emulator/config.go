package emulator

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Tokenizer is what the emulator needs of a tokenizer. *tito.Tokenizer satisfies it; the emulator never imports
// tito, so cmd/agentrt (or a test) injects one.
type Tokenizer interface {
	Encode(text string, addSpecialTokens bool) []int32
	Decode(ids []int32, skipSpecialTokens bool) string
}

// Policy names accepted by Config.Policy.
const (
	PolicyAgentic  = "agentic"
	PolicyScripted = "scripted"
)

// Tool-call formats accepted by Config.ToolFormat. They are SGLang's --tool-call-parser names, but for
// mistral_nemo and mistral_v11: SGLang's mistral parser reads every Mistral layout, and the emulator needs to know
// which to write.
const (
	FormatHermes      = "hermes"       // <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> (Qwen2.5/Qwen3)
	FormatQwen3Coder  = "qwen3_coder"  // <tool_call>\n<function=f>\n<parameter=k>\nv\n</parameter>\n</function>\n</tool_call>
	FormatLlama3      = "llama3"       // {"name": ..., "parameters": {...}} (Llama 3.1/3.2 JSON), one call per turn
	FormatSeedOSS     = "seed_oss"     // <seed:tool_call>\n<function=f>\n<parameter=k>v</parameter>\n</function>\n</seed:tool_call>
	FormatDeepSeekV3  = "deepseekv3"   // <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{...}\n```<｜tool▁call▁end｜>...
	FormatDeepSeekV31 = "deepseekv31"  // <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{...}<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
	FormatMistral     = "mistral"      // [TOOL_CALLS]f[ARGS]{...} per call (Devstral; mistral-common's v13 tokenizers)
	FormatMistralV11  = "mistral_v11"  // [TOOL_CALLS]f[CALL_ID]abcDEF123[ARGS]{...} per call (Mistral Small 3.2; mistral-common's v11; parser: mistral)
	FormatMistralNemo = "mistral_nemo" // [TOOL_CALLS][{"name": "f", "arguments": {...}, "id": "abcDEF123"}, ...] (Mistral Nemo; parser: mistral)
	FormatGPTOSS      = "gpt-oss"      // <|start|>assistant to=functions.f<|channel|>commentary json<|message|>{...}<|call|>, one call per turn
	FormatPythonic    = "pythonic"     // [f(k="v"), g(n=1, b=True)] (Llama 4 pythonic)
	FormatMiniMaxM2   = "minimax-m2"   // <minimax:tool_call>\n<invoke name="f">\n<parameter name="k">v</parameter>\n</invoke>\n</minimax:tool_call>
	FormatKimiK2      = "kimi_k2"      // <|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{...}<|tool_call_end|>...<|tool_calls_section_end|>
	FormatGLM45       = "glm45"        // \n<tool_call>f\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call> per call (GLM-4.5/4.6)
	FormatGLM47       = "glm47"        // <tool_call>f<arg_key>k</arg_key><arg_value>v</arg_value></tool_call> per call (GLM-4.7)
)

// ToolFormats are the values Config.ToolFormat accepts besides "".
var ToolFormats = []string{FormatHermes, FormatQwen3Coder, FormatLlama3, FormatSeedOSS, FormatMiniMaxM2, FormatKimiK2,
	FormatGLM45, FormatGLM47, FormatDeepSeekV3, FormatDeepSeekV31, FormatMistral, FormatMistralV11, FormatMistralNemo,
	FormatGPTOSS, FormatPythonic}

// Latency is the emulator's timing model. A request spends Fixed + PerPromptToken × (prompt tokens not in the
// prefix cache) in prefill, then PerOutputToken per generated token. Zero values mean no delay.
type Latency struct {
	Fixed          time.Duration `toml:"fixed"`
	PerPromptToken time.Duration `toml:"per_prompt_token"`
	PerOutputToken time.Duration `toml:"per_output_token"`
}

// ParseLatency parses "FIXED[,PER_PROMPT_TOKEN[,PER_OUTPUT_TOKEN]]" (Go durations, e.g. "50ms,20us,5ms") or the
// keyed form "fixed=50ms,prompt=20us,output=5ms". An empty string is no latency.
func ParseLatency(s string) (Latency, error) {
	var l Latency
	if strings.TrimSpace(s) == "" {
		return l, nil
	}
	fields := []*time.Duration{&l.Fixed, &l.PerPromptToken, &l.PerOutputToken}
	keys := map[string]*time.Duration{"fixed": &l.Fixed, "prompt": &l.PerPromptToken, "output": &l.PerOutputToken}
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		dst := (*time.Duration)(nil)
		if k, v, ok := strings.Cut(part, "="); ok {
			dst = keys[strings.TrimSpace(k)]
			if dst == nil {
				return Latency{}, fmt.Errorf("emulator: latency %q: unknown key %q (want fixed, prompt or output)", s, k)
			}
			part = strings.TrimSpace(v)
		} else {
			if i >= len(fields) {
				return Latency{}, fmt.Errorf("emulator: latency %q: at most 3 durations (fixed,prompt,output)", s)
			}
			dst = fields[i]
		}
		d, err := time.ParseDuration(part)
		if err != nil || d < 0 {
			return Latency{}, fmt.Errorf("emulator: latency %q: %q is not a non-negative duration such as 20ms", s, part)
		}
		*dst = d
	}
	return l, nil
}

// Faults are the rates (0..1, per /generate request) at which the emulator misbehaves. The draws come from a
// PRNG seeded by Config.Seed and advanced once per request, so a retry of the same request gets a fresh draw.
type Faults struct {
	// HTTP503 answers 503 {"object":"error","message":"The request queue is full.",...} (a chunk with an abort
	// finish_reason carrying status_code 503 when streaming).
	HTTP503 float64 `toml:"http_503"`
	// HTTP500 answers 500 with SGLang's HTTPException body.
	HTTP500 float64 `toml:"http_500"`
	// Reset closes the TCP connection with an RST before answering.
	Reset float64 `toml:"reset"`
	// Stall holds the request for StallFor (or until the client goes away) before serving it normally.
	Stall float64 `toml:"stall"`
	// Truncate sends a Content-Length for the whole body, then half of it, then closes the connection.
	Truncate float64 `toml:"truncate"`
	// ContextLength answers 400 "The input (N tokens) is longer than the model's context length (M tokens)."
	ContextLength float64 `toml:"context_length"`
	// StallFor is how long a stall lasts (default 30s).
	StallFor time.Duration `toml:"stall_for"`
}

func (f Faults) total() float64 {
	return f.HTTP503 + f.HTTP500 + f.Reset + f.Stall + f.Truncate + f.ContextLength
}

// ParseFaults parses "KIND=RATE,..." with kinds 503, 500, reset, stall, truncate, context (and stall_for=DURATION),
// or a single number, which is spread evenly over the six kinds. An empty string is no faults.
func ParseFaults(s string) (Faults, error) {
	var f Faults
	if strings.TrimSpace(s) == "" {
		return f, nil
	}
	if r, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		if r < 0 || r > 1 {
			return Faults{}, fmt.Errorf("emulator: fault rate %q: want a number in [0, 1]", s)
		}
		e := r / 6
		return Faults{HTTP503: e, HTTP500: e, Reset: e, Stall: e, Truncate: e, ContextLength: e}, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Faults{}, fmt.Errorf("emulator: fault rate %q: %q is not KIND=RATE", s, part)
		}
		k = strings.TrimSpace(k)
		v = strings.TrimSpace(v)
		if k == "stall_for" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return Faults{}, fmt.Errorf("emulator: fault rate %q: stall_for %q is not a duration", s, v)
			}
			f.StallFor = d
			continue
		}
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 || r > 1 {
			return Faults{}, fmt.Errorf("emulator: fault rate %q: rate %q for %s is not a number in [0, 1]", s, v, k)
		}
		switch k {
		case "503":
			f.HTTP503 = r
		case "500":
			f.HTTP500 = r
		case "reset":
			f.Reset = r
		case "stall":
			f.Stall = r
		case "truncate":
			f.Truncate = r
		case "context":
			f.ContextLength = r
		default:
			return Faults{}, fmt.Errorf("emulator: fault rate %q: unknown kind %q (want 503, 500, reset, stall, truncate, context or stall_for)", s, k)
		}
	}
	return f, nil
}

// Config configures a Server. Start from DefaultConfig.
type Config struct {
	// ModelPath is reported by /model_info, /server_info and /v1/models (SGLang's --model-path).
	ModelPath string `toml:"model_path"`
	// ModelType and Architectures are reported by /model_info.
	ModelType     string   `toml:"model_type"`
	Architectures []string `toml:"architectures"`
	// Seed makes everything deterministic: replies, non-canonical and malformed choices, fault draws. A reply
	// also depends on the prompt and on the request's rid or sampling_seed (see the package's Determinism).
	Seed uint64 `toml:"seed"`
	// Policy is PolicyAgentic (default) or PolicyScripted (needs WithScript).
	Policy string `toml:"policy"`
	// ToolFormat is the tool-call format of agentic replies; "" picks hermes for ChatML prompts and llama3 for
	// Llama 3 prompts.
	ToolFormat string `toml:"tool_format"`
	// StopIDs are the model's EOS ids; a reply ends with StopIDs[0] (e.g. Qwen's <|im_end|> 151645).
	StopIDs []int32 `toml:"stop_ids"`
	// ContextLength is the model's context length (SGLang's context_len; /v1/models max_model_len).
	ContextLength int `toml:"context_length"`
	// VocabSize bounds the ids used for top-logprob alternatives.
	VocabSize int `toml:"vocab_size"`
	// MaxRunningRequests is how many requests generate at once; more wait in a queue (0 = unlimited).
	MaxRunningRequests int `toml:"max_running_requests"`
	// MaxQueuedRequests bounds the waiting queue; beyond it a request gets 503 "The request queue is full."
	// (0 = unlimited).
	MaxQueuedRequests int `toml:"max_queued_requests"`
	// CacheTokens bounds the radix prefix cache (tokens); least recently used leaves are evicted beyond it.
	CacheTokens int `toml:"cache_tokens"`
	// KVTokens turns on the KV-capacity model (0: off): the running requests' prompt and output tokens share a
	// pool of this many tokens (SGLang's max_total_num_tokens); a request whose prompt does not fit waits, and
	// one that runs out of room while decoding is retracted (freed, re-queued, and prefilled again on
	// re-admission), as SGLang does. /v1/loads reports the pool's token_usage and the retracted queue.
	KVTokens int `toml:"kv_tokens"`
	// DrainTimeout bounds the drain of Run's shutdown (0: wait until every request has finished, as SGLang's
	// SIGTERM watchdog does); what is still running then is aborted.
	DrainTimeout time.Duration `toml:"drain_timeout"`
	// Latency is the timing model.
	Latency Latency `toml:"latency"`
	// Faults are injected fault rates.
	Faults Faults `toml:"faults"`
	// NonCanonicalRate is the fraction of replies whose output ids are a non-canonical tokenization of their
	// text (decode-then-encode gives other ids).
	NonCanonicalRate float64 `toml:"non_canonical_rate"`
	// MalformedRate is the fraction of tool-calling replies whose first tool call is malformed: broken JSON, an
	// unclosed tag, an unknown tool name, or its arguments left out (a required one missing), each as likely.
	MalformedRate float64 `toml:"malformed_rate"`
	// WrongAnswerRate is the fraction of final answers after tool results that report a wrong value for the
	// last expression (a slip, as a sampled model makes), so that a correctness reward varies within a group.
	WrongAnswerRate float64 `toml:"wrong_answer_rate"`
	// ThinkRate is the fraction of agentic replies that start with a <think>...</think> block (ChatML and DeepSeek
	// prompts, never when the generation prompt already closed the think block; where it opened it, the reply
	// reasons and closes it), or with an analysis message (gpt-oss's harmony prompts: the answer is then a final
	// channel message after it).
	ThinkRate float64 `toml:"think_rate"`
	// IgnoreRID makes replies independent of the client's rid (see doc.go, Determinism): two clients that send
	// the same prompts get the same replies whatever rids they use, as the side-by-side benchmark needs; samples
	// of one prompt are then alike unless they carry a sampling_seed or are items of one n > 1 request.
	IgnoreRID bool `toml:"ignore_rid"`
	// ThinkWords pads each <think> block with about this many words of filler reasoning (for benchmarks that
	// need long outputs; 0 keeps it to one sentence).
	ThinkWords int `toml:"think_words"`
	// WeightVersion is the initial weight_version ("default", as SGLang).
	WeightVersion string `toml:"weight_version"`
	// APIKey, if set, is required as "Authorization: Bearer KEY" on every endpoint but /health and
	// /health_generate (SGLang's --api-key): otherwise 401 {"error":"Unauthorized"}.
	APIKey string `toml:"api_key"`
	// IncrementalStreaming makes SSE chunks carry deltas of text, output_ids and the output logprob lists
	// (SGLang's --incremental-streaming-output) instead of cumulative values.
	IncrementalStreaming bool `toml:"incremental_streaming"`
}

// DefaultConfig returns the defaults: agentic policy, seed 0, Qwen3's stop ids and a 40960-token context, no
// latency, no faults.
func DefaultConfig() Config {
	return Config{
		ModelPath:     "Qwen/Qwen3-8B",
		ModelType:     "qwen3",
		Architectures: []string{"Qwen3ForCausalLM"},
		Policy:        PolicyAgentic,
		StopIDs:       []int32{151645, 151643},
		ContextLength: 40960,
		VocabSize:     151936,
		CacheTokens:   4 << 20,
		WeightVersion: "default",
		Faults:        Faults{StallFor: 30 * time.Second},
	}
}

// Validate reports the first invalid field, by its TOML name.
func (c *Config) Validate() error {
	switch c.Policy {
	case PolicyAgentic, PolicyScripted:
	default:
		return fmt.Errorf("emulator: policy %q: want %q or %q", c.Policy, PolicyAgentic, PolicyScripted)
	}
	if c.ToolFormat != "" && !slices.Contains(ToolFormats, c.ToolFormat) {
		quoted := make([]string, len(ToolFormats))
		for i, f := range ToolFormats {
			quoted[i] = strconv.Quote(f)
		}
		return fmt.Errorf("emulator: tool_format %q: want %s or %s", c.ToolFormat, strings.Join(quoted[:len(quoted)-1], ", "), quoted[len(quoted)-1])
	}
	if len(c.StopIDs) == 0 {
		return fmt.Errorf("emulator: stop_ids is empty: the emulator needs the model's EOS id (e.g. 151645 for Qwen)")
	}
	if c.ContextLength < 2 {
		return fmt.Errorf("emulator: context_length %d: want at least 2", c.ContextLength)
	}
	if c.VocabSize < 2 {
		return fmt.Errorf("emulator: vocab_size %d: want at least 2", c.VocabSize)
	}
	if c.MaxRunningRequests < 0 || c.MaxQueuedRequests < 0 || c.CacheTokens < 0 || c.ThinkWords < 0 || c.KVTokens < 0 || c.DrainTimeout < 0 {
		return fmt.Errorf("emulator: max_running_requests, max_queued_requests, cache_tokens, kv_tokens, drain_timeout and think_words must be >= 0")
	}
	if c.Latency.Fixed < 0 || c.Latency.PerPromptToken < 0 || c.Latency.PerOutputToken < 0 {
		return fmt.Errorf("emulator: latency durations must be >= 0")
	}
	for name, r := range map[string]float64{
		"non_canonical_rate": c.NonCanonicalRate, "malformed_rate": c.MalformedRate, "think_rate": c.ThinkRate,
		"wrong_answer_rate": c.WrongAnswerRate,
		"faults.http_503":   c.Faults.HTTP503, "faults.http_500": c.Faults.HTTP500, "faults.reset": c.Faults.Reset,
		"faults.stall": c.Faults.Stall, "faults.truncate": c.Faults.Truncate, "faults.context_length": c.Faults.ContextLength,
	} {
		if r < 0 || r > 1 {
			return fmt.Errorf("emulator: %s %v: want a rate in [0, 1]", name, r)
		}
	}
	if t := c.Faults.total(); t > 1 {
		return fmt.Errorf("emulator: fault rates sum to %v: want at most 1", t)
	}
	if c.WeightVersion == "" {
		return fmt.Errorf("emulator: weight_version is empty (SGLang's default is \"default\")")
	}
	return nil
}

// Option configures what a Config cannot serialise.
type Option func(*options)

type options struct {
	logger *slog.Logger
	log    io.Writer
	script *Script
	now    func() time.Time
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithLog writes every request and response as one JSON line to w (see the package doc for the record). Writes
// are serialised; each line is one Write call.
func WithLog(w io.Writer) Option { return func(o *options) { o.log = w } }

// WithScript sets the replies of the scripted policy.
func WithScript(s *Script) Option { return func(o *options) { o.script = s } }
